/// How often records were used lately, for ``StorageEvictionPolicy/adaptive``: a count-min sketch of
/// 4-bit counters (TinyLFU) kept in the store, so every process that folds reads counts into the same
/// figures. A block holds sixteen counters, and a record's four counters lie in one block, one in each
/// quarter. When the uses counted reach the halving period, every counter is halved, so old popularity fades.
///
/// A sketch has four blocks per record of the largest limit (rounded up to a power of two) and halves every
/// ten times that many uses, Caffeine's period. The sub-database `adaptive.sketch.rows` keeps them in rows
/// of eight blocks (`row# → 8 × UInt64`), and `meta` fixes the shape when the sketch is made
/// (`adaptive.sketch.shape`: blocks, halving period), so every process counts alike. A store whose sketch
/// was made before (`adaptive.sketch.size` in `meta`) keeps it: `adaptive.sketch`, a row per block, a block
/// per record, halved every five times its blocks.
///
/// One value per writer transaction: rows an increment reads are cached and the changed ones written by
/// ``flush()`` (a frequency read looks at the stored row in place); the sample count goes through the
/// transaction's ``MetaIntegers``.
final class FrequencySketch {
    /// Where a sketch is kept, and how.
    struct Layout {
        let databaseName: String
        let samplesKey: MetaIntegers.Key
        let blocksPerRow: UInt64

        static let rows = Layout(
            databaseName: "adaptive.sketch.rows", samplesKey: MetaIntegers.Key("adaptive.sketch.rows.samples"),
            blocksPerRow: 8)
        /// The layout of sketches made before rows: one block an entry.
        static let blocks = Layout(
            databaseName: "adaptive.sketch", samplesKey: MetaIntegers.Key("adaptive.sketch.samples"), blocksPerRow: 1)
    }

    static let shapeKey: [UInt8] = Array("adaptive.sketch.shape".utf8)
    /// The size of a sketch made before rows, in blocks.
    static let blockLayoutSizeKey = MetaIntegers.Key("adaptive.sketch.size")

    let txn: Transaction
    let database: Database
    let integers: MetaIntegers
    let layout: Layout
    /// Blocks in the sketch (a power of two).
    let blocks: UInt64
    /// Uses counted before every counter is halved.
    let halvingPeriod: UInt64
    private(set) var samples: UInt64
    private var cache: [UInt64: [UInt64]] = [:]
    private var dirty: Set<UInt64> = []

    /// Opens the sketch, making one of the shape for `capacity` records when the store has none.
    init(txn: Transaction, integers: MetaIntegers, capacity: Int) throws {
        self.txn = txn
        self.integers = integers
        let meta = integers.meta
        if let shape = try txn.get(meta, key: FrequencySketch.shapeKey).flatMap(SketchShape.init(stored:)) {
            (layout, blocks, halvingPeriod) = (.rows, shape.blocks, shape.halvingPeriod)
        } else if let size = try integers.stored(FrequencySketch.blockLayoutSizeKey),
            SketchShape.isValid(blocks: size)
        {
            (layout, blocks, halvingPeriod) = (.blocks, size, size * SketchMath.blockLayoutHalvingPerBlock)
        } else {
            let shape = SketchShape(capacity: capacity)
            try txn.put(meta, key: FrequencySketch.shapeKey, value: shape.bytes)
            (layout, blocks, halvingPeriod) = (.rows, shape.blocks, shape.halvingPeriod)
        }
        guard let database = try txn.openDatabase(layout.databaseName, create: true) else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        self.database = database
        samples = min(try integers.value(layout.samplesKey), halvingPeriod)
    }

    /// The estimated uses of a record (0...15).
    func frequency(type: UInt32, key: [UInt8]) throws -> Int {
        let hash = SketchMath.hash(type: type, key: key)
        return SketchMath.frequency(try peek(SketchMath.block(hash, blocks: blocks)), hash)
    }

    /// Counts one use of a record, halving every counter when the period is full.
    func increment(type: UInt32, key: [UInt8]) throws {
        let hash = SketchMath.hash(type: type, key: key)
        let index = SketchMath.block(hash, blocks: blocks)
        let (updated, changed) = SketchMath.incremented(try block(index), hash)
        guard changed else { return }
        let (row, slot) = (index / layout.blocksPerRow, Int(index % layout.blocksPerRow))
        cache[row]?[slot] = updated
        dirty.insert(row)
        samples += 1
        if samples >= halvingPeriod { try halve() }
    }

    /// Writes the changed rows and the sample count.
    func flush() throws {
        for row in dirty.sorted() {
            var value: [UInt8] = []
            for block in cache[row] ?? [] { value.appendBigEndian(block) }
            try txn.put(database, key: FrequencySketch.rowKey(row), value: value)
        }
        dirty.removeAll()
        integers.set(layout.samplesKey, to: samples)
    }

    /// The block at `index`, caching its row for a change when this transaction has not yet.
    private func block(_ index: UInt64) throws -> UInt64 {
        let row = index / layout.blocksPerRow
        if let cached = cache[row] { return cached[Int(index % layout.blocksPerRow)] }
        let words = try storedRow(row).flatMap(rowWords)
        let loaded = words ?? Array(repeating: 0, count: Int(layout.blocksPerRow))
        cache[row] = loaded
        return loaded[Int(index % layout.blocksPerRow)]
    }

    /// The block at `index` as the transaction has it, read in place when its row is not cached (a frequency
    /// read changes nothing, so it keeps no copy of the row).
    private func peek(_ index: UInt64) throws -> UInt64 {
        let row = index / layout.blocksPerRow
        let slot = Int(index % layout.blocksPerRow)
        if let cached = cache[row] { return cached[slot] }
        guard let stored = try storedRow(row), stored.count == Int(layout.blocksPerRow) * 8 else { return 0 }
        return UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: slot * 8, as: UInt64.self))
    }

    /// A stored row's blocks, or nil when its size is not the layout's (counted as zeros).
    private func rowWords(_ stored: UnsafeRawBufferPointer) -> [UInt64]? {
        guard stored.count == Int(layout.blocksPerRow) * 8 else { return nil }
        return (0..<Int(layout.blocksPerRow)).map {
            UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self))
        }
    }

    /// Halves every counter (the aging step of TinyLFU) and the sample count.
    private func halve() throws {
        try flush()
        var halved: [(UInt64, [UInt64])] = []
        try txn.withCursor(database) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                if current.key.count == 8, let words = rowWords(current.value) {
                    let row = UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self))
                    halved.append((row, words.map(SketchMath.halved)))
                }
                entry = try cursor.move(.next)
            }
        }
        cache.removeAll()
        for (row, words) in halved {
            if words.allSatisfy({ $0 == 0 }) {
                _ = try txn.delete(database, key: FrequencySketch.rowKey(row))
            } else {
                cache[row] = words
                dirty.insert(row)
            }
        }
        samples /= 2
    }

    /// The stored bytes of `row`, pointing into the map; its key is ``rowKey(_:)``'s bytes, made on the stack.
    private func storedRow(_ row: UInt64) throws -> UnsafeRawBufferPointer? {
        try withUnsafeBytes(of: row.bigEndian) { try txn.get(database, key: $0) }
    }

    private static func rowKey(_ row: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(row)
        return bytes
    }
}

/// The size and halving period of a sketch, as `meta` keeps them (`adaptive.sketch.shape`).
struct SketchShape: Equatable {
    let blocks: UInt64
    let halvingPeriod: UInt64

    /// The shape for a store whose largest limit is `capacity` records.
    init(capacity: Int) {
        let records = UInt64(max(1, capacity))
        var size: UInt64 = 64
        while size < min(records * SketchMath.blocksPerRecord, SketchMath.largestBlocks) { size <<= 1 }
        blocks = size
        halvingPeriod = records * SketchMath.halvingPerRecord
    }

    /// The shape `meta` holds, or nil when the bytes are not one.
    init?(stored: UnsafeRawBufferPointer) {
        guard stored.count == 16 else { return nil }
        blocks = UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
        halvingPeriod = UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard SketchShape.isValid(blocks: blocks), halvingPeriod > 0 else { return nil }
    }

    static func isValid(blocks: UInt64) -> Bool {
        blocks > 0 && blocks & (blocks - 1) == 0 && blocks <= SketchMath.largestBlocks
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(blocks)
        bytes.appendBigEndian(halvingPeriod)
        return bytes
    }
}

/// The arithmetic of ``FrequencySketch``, apart from storage (the tests' reference model uses it too).
enum SketchMath {
    /// Blocks per record of capacity in a new sketch (before rounding up to a power of two): sixty-four
    /// counters a record. One block a record, Caffeine's width, missed 0.5–1 point more of the Zipf traces.
    static let blocksPerRecord: UInt64 = 4
    /// Uses per record of capacity counted before every counter is halved (Caffeine's period).
    static let halvingPerRecord: UInt64 = 10
    /// The most blocks a sketch has (32 MiB of counters).
    static let largestBlocks: UInt64 = 1 << 22
    /// Uses per block counted before halving, in a sketch made before rows.
    static let blockLayoutHalvingPerBlock: UInt64 = 5

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
