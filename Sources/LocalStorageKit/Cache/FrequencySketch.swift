/// How often records were used lately, for ``StorageEvictionPolicy/adaptive``: a count-min sketch of
/// 4-bit counters (TinyLFU) kept in the store, so every process that folds reads counts into the same
/// figures. The sub-database `adaptive.sketch` holds blocks of sixteen counters (`block# → UInt64`); a
/// record's four counters lie in one block, one in each quarter. When the uses counted reach five times
/// the number of blocks, every counter is halved, so old popularity fades.
///
/// One value per writer transaction: blocks read are cached and the changed ones written by ``flush()``.
final class FrequencySketch {
    static let databaseName = "adaptive.sketch"
    static let sizeKey: [UInt8] = Array("adaptive.sketch.size".utf8)
    static let samplesKey: [UInt8] = Array("adaptive.sketch.samples".utf8)

    let txn: Transaction
    let database: Database
    let meta: Database
    /// Blocks in the sketch (a power of two).
    let blocks: UInt64
    private(set) var samples: UInt64
    private var cache: [UInt64: UInt64] = [:]
    private var dirty: Set<UInt64> = []
    private var samplesChanged = false

    /// Opens (creating) the sketch; a new one gets `capacity` rounded up to a power of two blocks, an
    /// existing one keeps its size, so every process counts alike.
    init(txn: Transaction, meta: Database, capacity: Int) throws {
        guard let database = try txn.openDatabase(FrequencySketch.databaseName, create: true) else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        self.txn = txn
        self.database = database
        self.meta = meta
        if let stored = try FrequencySketch.integer(meta, FrequencySketch.sizeKey, txn), stored > 0,
            stored & (stored - 1) == 0
        {
            blocks = stored
        } else {
            var size: UInt64 = 64
            while size < UInt64(max(1, min(capacity, 1 << 22))) { size <<= 1 }
            blocks = size
            var bytes: [UInt8] = []
            bytes.appendBigEndian(size)
            try txn.put(meta, key: FrequencySketch.sizeKey, value: bytes)
        }
        samples = try FrequencySketch.integer(meta, FrequencySketch.samplesKey, txn) ?? 0
    }

    /// The estimated uses of a record (0...15).
    func frequency(type: UInt32, key: [UInt8]) throws -> Int {
        let hash = SketchMath.hash(type: type, key: key)
        return SketchMath.frequency(try block(SketchMath.block(hash, blocks: blocks)), hash)
    }

    /// Counts one use of a record, halving every counter when the sample is full.
    func increment(type: UInt32, key: [UInt8]) throws {
        let hash = SketchMath.hash(type: type, key: key)
        let index = SketchMath.block(hash, blocks: blocks)
        let (updated, changed) = SketchMath.incremented(try block(index), hash)
        guard changed else { return }
        cache[index] = updated
        dirty.insert(index)
        samples += 1
        samplesChanged = true
        if samples >= blocks * SketchMath.samplesPerBlock { try halve() }
    }

    /// Writes the changed blocks and the sample count.
    func flush() throws {
        for index in dirty.sorted() {
            var value: [UInt8] = []
            value.appendBigEndian(cache[index] ?? 0)
            try txn.put(database, key: FrequencySketch.blockKey(index), value: value)
        }
        dirty.removeAll()
        if samplesChanged {
            var bytes: [UInt8] = []
            bytes.appendBigEndian(samples)
            try txn.put(meta, key: FrequencySketch.samplesKey, value: bytes)
            samplesChanged = false
        }
    }

    private func block(_ index: UInt64) throws -> UInt64 {
        if let cached = cache[index] { return cached }
        var value: UInt64 = 0
        if let stored = try txn.get(database, key: FrequencySketch.blockKey(index)), stored.count == 8 {
            value = UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
        }
        cache[index] = value
        return value
    }

    /// Halves every counter (the aging step of TinyLFU) and the sample count.
    private func halve() throws {
        try flush()
        var halved: [(UInt64, UInt64)] = []
        try txn.withCursor(database) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                if current.key.count == 8, current.value.count == 8 {
                    let index = UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self))
                    halved.append(
                        (index, SketchMath.halved(UInt64(bigEndian: current.value.loadUnaligned(as: UInt64.self)))))
                }
                entry = try cursor.move(.next)
            }
        }
        cache.removeAll()
        for (index, value) in halved {
            if value == 0 {
                _ = try txn.delete(database, key: FrequencySketch.blockKey(index))
            } else {
                cache[index] = value
                dirty.insert(index)
            }
        }
        samples /= 2
        samplesChanged = true
    }

    private static func blockKey(_ index: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(index)
        return bytes
    }

    private static func integer(_ meta: Database, _ key: [UInt8], _ txn: Transaction) throws -> UInt64? {
        guard let stored = try txn.get(meta, key: key), stored.count == 8 else { return nil }
        return UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
    }
}

/// The arithmetic of ``FrequencySketch``, apart from storage (the tests' reference model uses it too).
enum SketchMath {
    /// Uses counted per block before every counter is halved.
    static let samplesPerBlock: UInt64 = 5

    /// A stable 64-bit hash of a record (FNV-1a over type and key, then a SplitMix64 finaliser): the same in
    /// every process and every run.
    static func hash(type: UInt32, key: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for shift in stride(from: 24, through: 0, by: -8) {
            hash = (hash ^ UInt64((type >> UInt32(shift)) & 0xff)) &* 0x100_0000_01b3
        }
        for byte in key { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }

    static func block(_ hash: UInt64, blocks: UInt64) -> UInt64 { hash & (blocks - 1) }

    /// The bit offsets of a record's four counters in its block, one in each quarter.
    static func offsets(_ hash: UInt64) -> [UInt64] {
        (0..<4).map { depth in UInt64(depth * 16) + ((hash >> UInt64(32 + 2 * depth)) & 3) * 4 }
    }

    static func frequency(_ block: UInt64, _ hash: UInt64) -> Int {
        offsets(hash).map { Int((block >> $0) & 15) }.min() ?? 0
    }

    /// The block with each of the record's counters below 15 raised by one, and whether any was.
    static func incremented(_ block: UInt64, _ hash: UInt64) -> (UInt64, Bool) {
        var result = block
        var changed = false
        for offset in offsets(hash) where (result >> offset) & 15 < 15 {
            result += 1 << offset
            changed = true
        }
        return (result, changed)
    }

    static func halved(_ block: UInt64) -> UInt64 { (block >> 1) & 0x7777_7777_7777_7777 }
}
