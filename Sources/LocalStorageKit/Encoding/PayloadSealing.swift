import Foundation
import Synchronization

/// The layer between a codec's payload bytes and the bytes stored: seals them (``StorageEncryption``) on
/// the way in, opens them on the way out. One per open store; used where a record's payload is written
/// (``RecordWriter``) and where it is read (``RecordDecoding``, maintenance).
///
/// A sealed payload is `version (1) ‖ key id (1) ‖ nonce ‖ ciphertext ‖ tag (16)`, sealed over associated
/// data that binds it to its place: the seal version, the record's format byte, the type's storage name and
/// the id. A payload copied under another id or type, or with its format byte changed, fails to open. The
/// version names the cipher: 1 is XChaCha20-Poly1305 (24-byte nonce), 2 is AES-256-GCM (12-byte nonce),
/// which records are sealed with where the CPU has it (``SodiumCipher/hasAES256GCM``); reads take either.
///
/// A key check value (a constant sealed with the current key) in `meta` answers "is this the store's key?"
/// at open, before any record is read. It and the zstd dictionaries are sealed with XChaCha20-Poly1305,
/// which every CPU opens, so a store moved to a machine without AES instructions still opens, and says
/// which records it cannot read.
final class PayloadSealing: Sendable {
    struct Key: Sendable {
        let id: UInt8
        let cipher: SodiumCipher.Key
        var bytes: [UInt8] { cipher.bytes }
    }

    /// The seal version of XChaCha20-Poly1305 (records where the CPU lacks AES, the key check value,
    /// dictionaries, the shared tier's payloads).
    static let version: UInt8 = 1
    /// The seal version of AES-256-GCM.
    static let aesVersion: UInt8 = 2

    /// The cipher a seal version names, or nil for a version this library does not know.
    static func algorithm(ofVersion version: UInt8) -> SodiumCipher.Algorithm? {
        switch version {
        case PayloadSealing.version: .xChaCha20Poly1305
        case aesVersion: .aes256GCM
        default: nil
        }
    }
    /// Where the key check value lives in `meta`.
    static let checkKey: [UInt8] = Array("seal.check".utf8)
    static let checkText: [UInt8] = Array("LocalStorageKit key check value".utf8)

    /// The key new payloads are sealed with; nil when the store is not encrypted.
    let current: Key?
    /// Keys a payload may still be sealed with (rotation).
    let previous: [Key]
    /// Compresses payloads before they are sealed; nil when compression is off.
    let compressor: PayloadCompressor?
    /// The store's zstd dictionaries, for reading compressed payloads whether or not compression is on.
    let dictionaries: PayloadDictionaries
    /// The current key, then the previous ones.
    let keys: [Key]
    /// The store's `meta`, where the AES-256-GCM seals of each key are counted; nil for a salvage's sealing,
    /// which seals nothing.
    private let meta: Database?
    /// How many more payloads this process may seal with AES-256-GCM from the block it counted in `meta`.
    private let aesSealsLeft = Mutex<UInt64>(0)
    /// Whether the store holds a key check value: then every payload in it is sealed, and one that is not
    /// (a plain record copied in, or written by an instance without the key) is refused, as an altered one is.
    private let checksSealing: Atomic<Bool>
    /// Reads dictionary `id` as `meta` stores it now (sealed in an encrypted store), or nil when it has none:
    /// for a dictionary another process trained after this one loaded the store's.
    let storedDictionary: (@Sendable (UInt32) throws -> [UInt8]?)?

    init(
        current: Key?, previous: [Key], compressor: PayloadCompressor?, dictionaries: PayloadDictionaries,
        meta: Database? = nil, holdsOnlySealed: Bool = false,
        storedDictionary: (@Sendable (UInt32) throws -> [UInt8]?)? = nil
    ) {
        self.storedDictionary = storedDictionary
        checksSealing = Atomic(holdsOnlySealed)
        keys = (current.map { [$0] } ?? []) + previous
        self.current = current
        self.previous = previous
        self.compressor = compressor
        self.dictionaries = dictionaries
        self.meta = meta
    }

    /// Whether every payload of the store must be sealed (the store holds a key check value).
    var holdsOnlySealed: Bool { checksSealing.load(ordering: .relaxed) }

    /// Notes that the store now holds a key check value (a rekey sealed a store that was not encrypted).
    func noteKeyCheckWritten() { checksSealing.store(true, ordering: .relaxed) }

    // MARK: - The AES-256-GCM budget

    /// How many payloads one key seals with AES-256-GCM, counted in `meta`, before the store turns to
    /// XChaCha20-Poly1305 for it. AES-GCM's 96-bit random nonces stay safe (a collision less likely than
    /// 2⁻³²) for 2³² messages per key; counting stops at half of that, which leaves the other half for
    /// blocks counted in a transaction that then aborted (the count goes back, the process's block stays).
    static let aesSealLimit: UInt64 = 1 << 31
    /// How many seals a process counts in `meta` at once: one `meta` write per 65,536 seals.
    static let aesSealBlock: UInt64 = 1 << 16

    /// Where the AES-256-GCM seals of `key` are counted in `meta`: `seal.aes.` and 8 bytes of the key's
    /// keyed hash (a key check value names no key; neither does this).
    static func aesCountKey(_ key: Key) -> [UInt8] {
        Array("seal.aes.".utf8) + SodiumCipher.fingerprint(key.bytes)
    }

    /// Whether the next payload sealed in `txn` may use AES-256-GCM under `key`: the CPU has it and the key's
    /// count is below ``aesSealLimit``. Counts a new block in `meta` (in `txn`) when this process's is used up.
    private func takesAES(_ key: Key, txn: Transaction) throws -> Bool {
        guard SodiumCipher.hasAES256GCM, let meta else { return false }
        return try aesSealsLeft.withLock { left throws -> Bool in
            if left > 0 {
                left -= 1
                return true
            }
            let countKey = PayloadSealing.aesCountKey(key)
            var counted: UInt64 = 0
            if let stored = try txn.get(meta, key: countKey), stored.count == 8 {
                counted = UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self))
            }
            guard counted < PayloadSealing.aesSealLimit else { return false }
            let after = counted + PayloadSealing.aesSealBlock
            try withUnsafeBytes(of: after.littleEndian) { try txn.put(meta, key: countKey, value: Array($0)) }
            left = PayloadSealing.aesSealBlock - 1
            return true
        }
    }

    /// The first of `keys` that `open` accepts, trying those named `id` first, and what it opened; nil when
    /// none does. It makes no array: it runs on every read of a sealed payload.
    static func firstOpening<R>(
        _ keys: [Key], named id: UInt8, _ open: (Key) -> R?
    ) -> (key: Key, opened: R)? {
        for key in keys where key.id == id {
            if let opened = open(key) { return (key, opened) }
        }
        for key in keys where key.id != id {
            if let opened = open(key) { return (key, opened) }
        }
        return nil
    }

    /// The stored form of a payload the codec wrote in `format`, written in `txn`: compressed when it is worth
    /// it, then sealed when the store is encrypted (with AES-256-GCM while the key's count in `meta` allows);
    /// with the envelope flags that say what was done.
    ///
    /// - Throws: `encodingFailed`; what `txn` throws counting AES seals (`storageFull`).
    func wrap(
        _ payload: [UInt8], format: PayloadFormat, typeName: String, id: [UInt8], txn: Transaction
    ) throws -> (envelope: PayloadEnvelope, bytes: [UInt8]) {
        var envelope: PayloadEnvelope = []
        var bytes = payload
        if let compressor, let compressed = compressor.compress(payload) {
            envelope.insert(.compressed)
            bytes = compressed
        }
        guard let current else { return (envelope, bytes) }
        let portable = try !takesAES(current, txn: txn)
        return try seal(bytes, envelope: envelope, format: format, typeName: typeName, id: id, portable: portable)
    }

    /// `bytes` sealed with the current key when the store is encrypted (adding `.sealed` to `envelope`), else
    /// as they are: with XChaCha20-Poly1305, which every CPU opens, when `portable`, else with AES-256-GCM
    /// (which needs the CPU to have it; ``wrap(_:format:typeName:id:txn:)`` decides and counts). The shared
    /// tier stores payloads sealed, portable, and never compressed: other hosts may lack AES instructions,
    /// and each store trains its own zstd dictionaries.
    func seal(
        _ bytes: [UInt8], envelope: PayloadEnvelope = [], format: PayloadFormat, typeName: String, id: [UInt8],
        portable: Bool
    ) throws(LocalStorageError) -> (envelope: PayloadEnvelope, bytes: [UInt8]) {
        var envelope = envelope
        guard let current else { return (envelope, bytes) }
        envelope.insert(.sealed)
        let useAES = SodiumCipher.hasAES256GCM && !portable
        let version = useAES ? PayloadSealing.aesVersion : PayloadSealing.version
        var typeName = typeName
        let sealed: Result<[UInt8], LocalStorageError> = typeName.withUTF8 { name in
            id.withUnsafeBytes { id in
                PayloadSealing.withAssociatedData(
                    sealVersion: version, formatByte: format.rawValue | envelope.rawValue,
                    name: UnsafeRawBufferPointer(name), id: id
                ) { associated in
                    bytes.withUnsafeBytes { plain in
                        Result { () throws(LocalStorageError) in
                            try SodiumCipher.seal(
                                plain, associated: associated, key: current.cipher, prefix: [version, current.id],
                                algorithm: useAES ? .aes256GCM : .xChaCha20Poly1305)
                        }
                    }
                }
            }
        }
        return (envelope, try sealed.get())
    }

    /// The stack buffer a sealed payload of up to its size is opened into.
    private typealias OpeningRoom = InlineArray<512, UInt8>

    /// Calls `body` with the codec's bytes of a stored payload: in place when nothing was done to it, else
    /// opened and decompressed. `resealable` is true when the payload was sealed with a previous key.
    ///
    /// - Throws: `decodingFailed` naming the type and id when the payload does not authenticate (altered,
    ///   moved, or sealed with a key that is not configured) or does not decompress.
    func withPayload<R>(
        of view: RecordView, typeName: String, id: String,
        _ body: (_ bytes: UnsafeRawBufferPointer, _ resealable: Bool) throws -> R
    ) throws -> R {
        let envelope = view.envelope
        guard envelope.contains(.sealed) || !holdsOnlySealed else {
            throw failure(
                typeName, id,
                "its payload is not sealed, though the store is encrypted (it was not written by this store with "
                    + "its key: copied in, or written by an instance without the key)")
        }
        if envelope.isEmpty { return try body(view.payload, false) }
        var bytes: [UInt8]
        var resealable = false
        if envelope.contains(.sealed) {
            let stored = view.payload
            guard stored.count >= 2, let algorithm = PayloadSealing.algorithm(ofVersion: stored[0]),
                stored.count >= 2 + algorithm.nonceLength + SodiumCipher.tagLength
            else { throw failure(typeName, id, "its sealed payload is damaged or of an unknown version") }
            if algorithm == .aes256GCM, !SodiumCipher.hasAES256GCM {
                throw failure(
                    typeName, id,
                    "its payload is sealed with AES-256-GCM, which libsodium runs only on CPUs with AES instructions")
            }
            guard current != nil || !previous.isEmpty else {
                throw failure(typeName, id, "its payload is sealed and the store was opened without a key")
            }
            func unopened() -> LocalStorageError {
                failure(
                    typeName, id,
                    "its sealed payload fails authentication (altered, moved from another id or type, or sealed "
                        + "with a key that is not configured)")
            }
            if !envelope.contains(.compressed) {
                // Opened into a temporary buffer and decoded there: no array per read. A small payload's buffer
                // is on the stack. (Not `withUnsafeTemporaryAllocation`: its throwing form looks up the metadata
                // of a `Result<R, any Error>` in the runtime at every call, as `R` is a type unknown here.)
                let count = stored.count - 2 - algorithm.nonceLength - SodiumCipher.tagLength
                func openAndRead(into plain: UnsafeMutableRawBufferPointer) throws -> R {
                    guard let key = open(view, typeName: typeName, id: id, into: plain) else { throw unopened() }
                    return try body(UnsafeRawBufferPointer(plain), isPrevious(key))
                }
                if count <= OpeningRoom.count {
                    var room = OpeningRoom(repeating: 0)
                    return try withUnsafeMutableBytes(of: &room) { buffer in
                        try openAndRead(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
                    }
                }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
                defer { buffer.deallocate() }
                return try openAndRead(into: buffer)
            }
            guard let (key, opened) = opening(view, typeName: typeName, id: id) else { throw unopened() }
            bytes = opened
            resealable = isPrevious(key)
        } else {
            bytes = Array(view.payload)
        }
        if envelope.contains(.compressed) {
            var plain = PayloadCompressor.decompress(bytes, dictionaries: dictionaries)
            // Compressed with a dictionary another process trained since this one loaded the store's.
            if plain == nil, try learnDictionary(of: bytes) {
                plain = PayloadCompressor.decompress(bytes, dictionaries: dictionaries)
            }
            guard let plain else {
                throw failure(typeName, id, PayloadCompressor.whyNotDecompressed(bytes, dictionaries: dictionaries))
            }
            bytes = plain
        }
        return try bytes.withUnsafeBytes { try body($0, resealable) }
    }

    /// Whether the stored payload of `view` (type `typeName`, id `id`) is sealed and none of the keys of
    /// `sealing` opens it (or there are none): sealed with another key, by a newer library (another seal
    /// version), or altered. Maintenance never removes such a record: it may be whole under a key it was
    /// not given. (Key ids are one byte of a hash and two keys may share one, so only opening tells.)
    static func isUnopened(_ view: RecordView, typeName: String, id: String, sealing: PayloadSealing?) -> Bool {
        let stored = view.payload
        guard view.envelope.contains(.sealed) else { return false }
        guard let sealing, !sealing.keys.isEmpty, stored.count >= 2, algorithm(ofVersion: stored[0]) != nil else {
            return true
        }
        return sealing.opening(view, typeName: typeName, id: id) == nil
    }

    /// Whether `key` is not the current key: what it opened is resealed.
    private func isPrevious(_ key: Key) -> Bool {
        guard let current else { return true }
        return key.cipher !== current.cipher && key.bytes != current.bytes
    }

    /// The key that opens the sealed payload of `view` (type `typeName`, id `id`) and its plaintext, or nil
    /// when none of the keys does (or its version is unknown).
    private func opening(_ view: RecordView, typeName: String, id: String) -> (key: Key, opened: [UInt8])? {
        let stored = view.payload
        guard stored.count >= 2, let algorithm = PayloadSealing.algorithm(ofVersion: stored[0]),
            let count = SodiumCipher.plainCount(stored.count - 2, algorithm)
        else { return nil }
        var key: Key?
        let opened = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            key = open(view, typeName: typeName, id: id, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = key == nil ? 0 : count
        }
        return key.map { ($0, opened) }
    }

    /// Opens the sealed payload of `view` (type `typeName`, id `id`) into `plain` (exactly its plaintext's
    /// length) and returns the key that opened it, or nil when none does (or its version is unknown). Builds
    /// the associated data on the stack.
    private func open(
        _ view: RecordView, typeName: String, id: String, into plain: UnsafeMutableRawBufferPointer
    ) -> Key? {
        let stored = view.payload
        guard stored.count >= 2, let algorithm = PayloadSealing.algorithm(ofVersion: stored[0]) else { return nil }
        let sealed = UnsafeRawBufferPointer(rebasing: stored[2...])
        let formatByte = view.format.rawValue | view.envelope.rawValue
        var typeName = typeName
        var id = id
        return typeName.withUTF8 { name in
            id.withUTF8 { id in
                PayloadSealing.withAssociatedData(
                    sealVersion: stored[0], formatByte: formatByte, name: UnsafeRawBufferPointer(name),
                    id: UnsafeRawBufferPointer(id)
                ) { associated in
                    PayloadSealing.firstOpening(keys, named: stored[1]) { key -> Bool? in
                        SodiumCipher.open(
                            sealed, associated: associated, key: key.cipher, algorithm: algorithm, into: plain)
                            ? true : nil
                    }?.key
                }
            }
        }
    }

    /// The stored payload of `view` sealed with the current key as it is inside its seal, or nil when the current
    /// key sealed it already: what `rekey` writes. Nothing is decoded or decompressed, so a compressed payload
    /// stays compressed; a payload that is not sealed (written before the store was encrypted, or by an
    /// instance without the key) is sealed as it is.
    ///
    /// - Throws: `decodingFailed` naming the type and id when no key of the store opens it.
    func resealed(
        _ view: RecordView, typeName: String, id: [UInt8]
    ) throws(LocalStorageError) -> (envelope: PayloadEnvelope, bytes: [UInt8])? {
        guard let current else { return nil }
        var envelope = view.envelope
        let inner: [UInt8]
        if envelope.contains(.sealed) {
            let text = String(decoding: id, as: UTF8.self)
            guard let (key, opened) = opening(view, typeName: typeName, id: text) else {
                throw failure(typeName, text, "its sealed payload fails authentication under every key given")
            }
            if key.bytes == current.bytes { return nil }
            inner = opened
            envelope.remove(.sealed)
        } else {
            inner = Array(view.payload)
        }
        return try seal(inner, envelope: envelope, format: view.format, typeName: typeName, id: id, portable: true)
    }

    /// Whether ``resealed(_:typeName:id:)`` may have something to do for `view`, told without opening it: a
    /// payload not sealed, or whose seal names a key id other than the current key's (or one the current key
    /// shares with a previous key).
    func mayNeedResealing(_ view: RecordView) -> Bool {
        guard let current else { return false }
        guard view.envelope.contains(.sealed) else { return true }
        let stored = view.payload
        guard stored.count >= 2 else { return true }  // Damaged: the reseal reports it.
        return stored[stored.startIndex + 1] != current.id || previous.contains { $0.id == current.id }
    }

    private func failure(_ typeName: String, _ id: String, _ reason: String) -> LocalStorageError {
        .decodingFailed(reason: "\(typeName) \"\(id)\": \(reason)")
    }

    /// Calls `body` with what a sealed payload is bound to, made in a temporary buffer: seal version, format
    /// byte, storage name (length-prefixed, as names may hold any byte), id. Sealing and opening both build it
    /// here.
    static func withAssociatedData<R>(
        sealVersion: UInt8, formatByte: UInt8, name: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let count = 6 + name.count + id.count
        return withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
            buffer[0] = sealVersion
            buffer[1] = formatByte
            buffer.storeBytes(of: UInt32(truncatingIfNeeded: name.count).littleEndian, toByteOffset: 2, as: UInt32.self)
            UnsafeMutableRawBufferPointer(rebasing: buffer[6..<(6 + name.count)]).copyMemory(from: name)
            UnsafeMutableRawBufferPointer(rebasing: buffer[(6 + name.count)...]).copyMemory(from: id)
            return body(UnsafeRawBufferPointer(buffer))
        }
    }
}
