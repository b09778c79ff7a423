import CZstd
import Synchronization

/// zstd compression of payloads with dictionaries trained from the store's own records.
///
/// A compressed payload is `dictionary id (UInt32, little-endian; 0 = none) ‖ zstd frame`. A payload is
/// compressed only when it is longer than the threshold and the result is smaller. The writer samples the
/// payloads it compresses (the first ``sampleBytes`` of each); after ``trainingSamples`` of them it trains a
/// dictionary (`ZDICT_trainFromBuffer`) from the last ``trainingSamples``, stores it in `meta` under an id no
/// other dictionary has, in the same transaction, and compresses with it once that commits. A store whose data
/// drifts gets new dictionaries, each after twice as many payloads as the one before and at most
/// ``maximumDictionaries`` in all: the old ones stay for the records that use them, and every open loads them.
final class PayloadCompressor: Sendable {
    let level: Int32
    let threshold: Int
    let meta: Database
    let dictionaries: PayloadDictionaries
    /// The key dictionaries are sealed with before they go to `meta` (an encrypted store): a dictionary is
    /// made of pieces of the payloads it was trained on.
    let dictionaryKey: PayloadSealing.Key?
    /// The payloads sampled for the next dictionary, and how many were seen since the last one.
    private struct Training {
        var samples: [[UInt8]] = []
        var seen = 0
        /// Dictionaries this process trained (a batch trains before its first one commits and is counted).
        var trained = 0
    }
    private let training = Mutex(Training())
    private let trainEvery: Mutex<Int>
    /// The largest dictionary trained.
    static let dictionaryCapacity = 16 << 10
    /// How much of each payload is sampled: a dictionary helps small payloads, and the samples of a store of
    /// large ones stay at most ``trainingSamples`` × this in memory (they were whole payloads: 1 GB for a
    /// thousand 1 MB photos, trained on inside the write transaction).
    static let sampleBytes = 1 << 10
    /// The most dictionaries a store trains (dictionaries are never removed; every open loads them).
    static let maximumDictionaries = 24

    init(
        _ compression: StorageCompression, meta: Database, dictionaries: PayloadDictionaries,
        dictionaryKey: PayloadSealing.Key? = nil, trainingSamples: Int = 1000
    ) {
        self.dictionaries = dictionaries
        self.dictionaryKey = dictionaryKey
        level = Int32(compression.level)
        threshold = compression.threshold
        self.meta = meta
        trainEvery = Mutex(trainingSamples)
    }

    /// How many payloads the writer samples before it trains a dictionary (tests lower it).
    var trainingSamples: Int {
        get { trainEvery.withLock { $0 } }
        set { trainEvery.withLock { $0 = max(newValue, 8) } }
    }

    /// The bytes sampled for the next dictionary so far.
    var sampledBytes: Int { training.withLock { $0.samples.reduce(0) { $0 + $1.count } } }

    /// Dictionary ids to try before random ones (tests make two dictionaries draw the same id).
    let idsToTry = Mutex<[UInt32]>([])

    /// `payload` compressed with the newest dictionary, or nil when it is short or does not shrink.
    func compress(_ payload: [UInt8]) -> [UInt8]? {
        guard payload.count > threshold else { return nil }
        let id = dictionaries.newest.id
        let dictionary = id == 0 ? nil : dictionaries.digested(id)?.forCompression(level: level)
        if id != 0 && dictionary == nil { return nil }
        let bound = ZSTD_compressBound(payload.count)
        var out = [UInt8](repeating: 0, count: 4 + bound)
        let level = self.level
        let written: Int = out.withUnsafeMutableBytes { out in
            guard let base = out.baseAddress else { return 0 }
            base.storeBytes(of: id.littleEndian, as: UInt32.self)
            let result = ZstdContextPool.compression.with { context -> Int in
                // Each frame ends with a checksum of its content: a damaged compressed payload fails to decompress
                // instead of decoding to other values (frames written before it have none and still read).
                ZSTD_CCtx_reset(context, ZSTD_reset_session_and_parameters)
                ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
                if let dictionary {
                    ZSTD_CCtx_refCDict(context, dictionary.pointer)
                } else {
                    ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
                }
                return payload.withUnsafeBytes { source in
                    ZSTD_compress2(context, base + 4, bound, source.baseAddress, source.count)
                }
            }
            guard let result, ZSTD_isError(result) == 0 else { return 0 }
            return result
        }
        guard written > 0, 4 + written < payload.count else { return nil }
        out.removeLast(out.count - 4 - written)
        return out
    }

    /// Whether a frame of `frameBytes` bytes can hold the `size` its header claims (ZSTD_getFrameContentSize's
    /// answer, whose two largest values say "unknown" and "error"). No zstd block holds more than 128 KiB or
    /// takes fewer than 4 bytes (an RLE block), so a frame never grows more than 32,768 times: a damaged
    /// header claiming more is refused before anything is allocated for it.
    static func plausibleContentSize(_ size: UInt64, frameBytes: Int) -> Bool {
        size < UInt64.max - 1 && size <= UInt64(Int32.max) && size <= UInt64(max(0, frameBytes)) * 32_768
    }

    /// Why `compressed` did not decompress: a dictionary the store does not have (missing, or stored damaged or
    /// sealed with a key this process was not given, so that it did not open), or a damaged frame.
    static func whyNotDecompressed(_ compressed: [UInt8], dictionaries: PayloadDictionaries?) -> String {
        if compressed.count > 4 {
            let id = compressed.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            if id != 0, dictionaries?.digested(id) == nil {
                return "its compressed payload needs dictionary \(id), which the store does not hold or which did "
                    + "not open (damaged, or sealed with a key not given)"
            }
        }
        return "its compressed payload does not decompress"
    }

    /// The payload in `compressed`, or nil when it is damaged or names a dictionary not in `dictionaries`.
    static func decompress(_ compressed: [UInt8], dictionaries: PayloadDictionaries?) -> [UInt8]? {
        guard compressed.count > 4 else { return nil }
        return compressed.withUnsafeBytes { bytes -> [UInt8]? in
            guard let base = bytes.baseAddress else { return nil }
            let id = UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))
            let frame = base + 4
            let size = ZSTD_getFrameContentSize(frame, bytes.count - 4)
            guard plausibleContentSize(size, frameBytes: bytes.count - 4) else { return nil }
            var dictionary: ZstdDigestedDictionary?
            if id != 0 {
                guard let found = dictionaries?.digested(id) else { return nil }
                dictionary = found
            }
            var out = [UInt8](repeating: 0, count: Int(size))
            let written: Int? = out.withUnsafeMutableBytes { out in
                ZstdContextPool.decompression.with { context in
                    let result =
                        if let dictionary {
                            ZSTD_decompress_usingDDict(
                                context, out.baseAddress, out.count, frame, bytes.count - 4,
                                dictionary.forDecompression)
                        } else {
                            ZSTD_decompressDCtx(context, out.baseAddress, out.count, frame, bytes.count - 4)
                        }
                    return ZSTD_isError(result) != 0 ? -1 : result
                }
            }
            return written == Int(size) ? out : nil
        }
    }

    /// Notes a payload the writer stored; when enough are collected, trains a dictionary from them and
    /// stores it in `meta` in `txn`. Returns the new dictionary's id and bytes, for the caller to adopt once
    /// the transaction commits.
    func noteSample(_ payload: [UInt8], txn: Transaction) throws -> (UInt32, [UInt8])? {
        guard payload.count > threshold else { return nil }
        let known = dictionaries.count
        let every = trainingSamples
        let batch: [[UInt8]]? = training.withLock { training in
            let trained = max(known, training.trained)
            guard trained < PayloadCompressor.maximumDictionaries else { return nil }
            // The n-th dictionary comes after `every` × 2ⁿ payloads: a busy store trains a few, not one every
            // thousand saves for ever.
            let interval = every << min(trained, 30)
            training.seen += 1
            if training.seen > interval - every {
                training.samples.append(Array(payload.prefix(PayloadCompressor.sampleBytes)))
            }
            guard training.seen >= interval else { return nil }
            defer { training = Training(trained: trained + 1) }
            return training.samples
        }
        guard let batch, let bytes = PayloadCompressor.train(batch) else { return nil }
        // An id no dictionary of the store has: writing over one would leave its records unreadable.
        var id: UInt32 = 0
        while try id == 0 || isTaken(id, txn: txn) {
            id = idsToTry.withLock { $0.isEmpty ? nil : $0.removeFirst() } ?? UInt32.random(in: 1...UInt32.max)
        }
        let stored = try dictionaryKey.map {
            try PayloadSealing.sealDictionary(bytes, at: PayloadDictionaries.key(id), key: $0)
        }
        try txn.put(meta, key: PayloadDictionaries.key(id), value: stored ?? bytes)
        var newest: [UInt8] = []
        newest.appendLittleEndian(id)
        try txn.put(meta, key: PayloadDictionaries.newestKey, value: newest)
        return (id, bytes)
    }

    /// Whether the store has a dictionary `id` (this process knows it, or `meta` holds it).
    private func isTaken(_ id: UInt32, txn: Transaction) throws -> Bool {
        try dictionaries.dictionary(id) != nil || txn.get(meta, key: PayloadDictionaries.key(id)) != nil
    }

    /// A dictionary trained from `samples`, or nil when zstd finds none.
    static func train(_ samples: [[UInt8]]) -> [UInt8]? {
        let joined = samples.flatMap { $0 }
        let sizes = samples.map { $0.count }
        var dictionary = [UInt8](repeating: 0, count: dictionaryCapacity)
        let length: Int = dictionary.withUnsafeMutableBytes { out in
            joined.withUnsafeBytes { source in
                let result = ZDICT_trainFromBuffer(
                    out.baseAddress, out.count, source.baseAddress, sizes, UInt32(sizes.count))
                return ZDICT_isError(result) != 0 ? 0 : result
            }
        }
        guard length > 0 else { return nil }
        dictionary.removeLast(dictionary.count - length)
        return dictionary
    }
}
