import Foundation

/// The layer between a codec's payload bytes and the bytes stored: seals them (``StorageEncryption``) on
/// the way in, opens them on the way out. One per open store; used where a record's payload is written
/// (``RecordWriter``) and where it is read (``RecordDecoding``, maintenance).
///
/// A sealed payload is `version (1) ‖ key id (1) ‖ nonce (24) ‖ ciphertext ‖ tag (16)`, sealed with
/// XChaCha20-Poly1305 over associated data that binds it to its place: the seal version, the record's
/// format byte, the type's storage name and the id. A payload copied under another id or type, or with
/// its format byte changed, fails to open.
///
/// A key check value (a constant sealed with the current key) in `meta` answers "is this the store's key?"
/// at open, before any record is read.
final class PayloadSealing: Sendable {
    struct Key: Sendable {
        let id: UInt8
        let bytes: [UInt8]
    }

    static let version: UInt8 = 1
    /// Where the key check value lives in `meta`.
    static let checkKey: [UInt8] = Array("seal.check".utf8)
    private static let checkText: [UInt8] = Array("LocalStorageKit key check value".utf8)

    /// The key new payloads are sealed with; nil when the store is not encrypted.
    let current: Key?
    /// Keys a payload may still be sealed with (rotation).
    let previous: [Key]
    /// Compresses payloads before they are sealed; nil when compression is off.
    let compressor: PayloadCompressor?
    /// The store's zstd dictionaries, for reading compressed payloads whether or not compression is on.
    let dictionaries: PayloadDictionaries

    init(current: Key?, previous: [Key], compressor: PayloadCompressor?, dictionaries: PayloadDictionaries) {
        self.current = current
        self.previous = previous
        self.compressor = compressor
        self.dictionaries = dictionaries
    }

    /// The sealing an open with `encryption` gets, after checking it against the store's key check value
    /// in `meta` (written when the store has none yet, or rewritten to the current key when it was
    /// sealed with a previous one, unless `readOnly`).
    ///
    /// - Throws: `openFailed` for a key of the wrong length, an encrypted store opened without a key, or a
    ///   key that is not the store's; nothing else is read.
    static func open(
        encryption: StorageEncryption?, compression: StorageCompression, meta: Database, txn: Transaction,
        path: String, readOnly: Bool = false
    ) throws -> PayloadSealing {
        let dictionaries = PayloadDictionaries()
        try dictionaries.load(meta: meta, txn: txn)
        let compressor =
            compression.isEnabled ? PayloadCompressor(compression, meta: meta, dictionaries: dictionaries) : nil
        let stored = try txn.get(meta, key: checkKey).map { Array($0) }
        let sealing = try checked(
            encryption: encryption, storedCheck: stored, compressor: compressor, dictionaries: dictionaries,
            path: path)
        guard let current = sealing.current, !readOnly else { return sealing }
        let opener = stored.flatMap { check in check.withUnsafeBytes { sealing.openCheck($0) } }
        if opener?.bytes == current.bytes { return sealing }
        let check = try checkText.withUnsafeBytes { plain in
            try SodiumCipher.seal(plain, associated: checkKey, key: current.bytes, prefix: [version, current.id])
        }
        try txn.put(meta, key: checkKey, value: check)
        return sealing
    }

    /// The sealing that reads the records of a damaged store whose `meta` entries a salvage walk collected
    /// (its dictionaries, and its key check value when that could be read); it compresses nothing.
    ///
    /// - Throws: `openFailed` for an encrypted store salvaged without a key, or with a key that is not the
    ///   store's.
    static func forSalvage(
        encryption: StorageEncryption?, metaEntries: [(key: [UInt8], value: [UInt8])], path: String
    ) throws -> PayloadSealing {
        let dictionaries = PayloadDictionaries()
        dictionaries.load(metaEntries: metaEntries)
        let stored = metaEntries.first { $0.key == checkKey }?.value
        return try checked(
            encryption: encryption, storedCheck: stored, compressor: nil, dictionaries: dictionaries, path: path)
    }

    /// The sealing for `encryption`, after checking it against the store's key check value `storedCheck`.
    private static func checked(
        encryption: StorageEncryption?, storedCheck stored: [UInt8]?, compressor: PayloadCompressor?,
        dictionaries: PayloadDictionaries, path: String
    ) throws -> PayloadSealing {
        guard let encryption else {
            if stored != nil {
                throw LocalStorageError.openFailed(
                    path: path,
                    reason: "the store is encrypted: open it with its key (configuration.encryption, or --key-file)")
            }
            return PayloadSealing(current: nil, previous: [], compressor: compressor, dictionaries: dictionaries)
        }
        if let problem = encryption.problem { throw LocalStorageError.openFailed(path: path, reason: problem) }
        let keys = ([encryption.key] + encryption.previousKeys).map {
            Key(id: SodiumCipher.keyID(Array($0)), bytes: Array($0))
        }
        let sealing = PayloadSealing(
            current: keys[0], previous: Array(keys.dropFirst()), compressor: compressor, dictionaries: dictionaries)
        if let stored, stored.withUnsafeBytes({ sealing.openCheck($0) }) == nil {
            throw LocalStorageError.openFailed(
                path: path,
                reason: "the encryption key is not this store's key"
                    + (encryption.previousKeys.isEmpty ? "" : ", nor is any of the previous keys"))
        }
        return sealing
    }

    /// The key that opens a key check value, or nil.
    private func openCheck(_ stored: UnsafeRawBufferPointer) -> Key? {
        guard stored.count > 2, stored[0] == PayloadSealing.version else { return nil }
        let sealed = UnsafeRawBufferPointer(rebasing: stored[2...])
        return candidates(for: stored[1]).first { key in
            SodiumCipher.open(sealed, associated: PayloadSealing.checkKey, key: key.bytes) == PayloadSealing.checkText
        }
    }

    /// The configured keys, those named `id` first.
    private func candidates(for id: UInt8) -> [Key] {
        let all = (current.map { [$0] } ?? []) + previous
        return all.filter { $0.id == id } + all.filter { $0.id != id }
    }

    /// The stored form of a payload the codec wrote in `format`: compressed when it is worth it, then sealed
    /// when the store is encrypted; with the envelope flags that say what was done.
    func wrap(
        _ payload: [UInt8], format: PayloadFormat, typeName: String, id: [UInt8]
    ) throws(LocalStorageError) -> (envelope: PayloadEnvelope, bytes: [UInt8]) {
        var envelope: PayloadEnvelope = []
        var bytes = payload
        if let compressor, let compressed = compressor.compress(payload) {
            envelope.insert(.compressed)
            bytes = compressed
        }
        guard let current else { return (envelope, bytes) }
        envelope.insert(.sealed)
        let associated = PayloadSealing.associatedData(
            formatByte: format.rawValue | envelope.rawValue, typeName: typeName, id: id)
        let sealed: Result<[UInt8], LocalStorageError> = bytes.withUnsafeBytes { plain in
            Result { () throws(LocalStorageError) in
                try SodiumCipher.seal(
                    plain, associated: associated, key: current.bytes, prefix: [PayloadSealing.version, current.id])
            }
        }
        return (envelope, try sealed.get())
    }

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
        if envelope.isEmpty { return try body(view.payload, false) }
        var bytes: [UInt8]
        var resealable = false
        if envelope.contains(.sealed) {
            let stored = view.payload
            guard stored.count >= 2 + SodiumCipher.nonceLength + SodiumCipher.tagLength,
                stored[0] == PayloadSealing.version
            else { throw failure(typeName, id, "its sealed payload is damaged or of an unknown version") }
            guard current != nil || !previous.isEmpty else {
                throw failure(typeName, id, "its payload is sealed and the store was opened without a key")
            }
            let associated = PayloadSealing.associatedData(
                formatByte: view.format.rawValue | envelope.rawValue, typeName: typeName, id: Array(id.utf8))
            let sealed = UnsafeRawBufferPointer(rebasing: stored[2...])
            var opened: [UInt8]?
            for key in candidates(for: stored[1]) {
                if let plain = SodiumCipher.open(sealed, associated: associated, key: key.bytes) {
                    opened = plain
                    resealable = key.bytes != current?.bytes
                    break
                }
            }
            guard let opened else {
                throw failure(
                    typeName, id,
                    "its sealed payload fails authentication (altered, moved from another id or type, or sealed "
                        + "with a key that is not configured)")
            }
            bytes = opened
        } else {
            bytes = Array(view.payload)
        }
        if envelope.contains(.compressed) {
            guard let plain = PayloadCompressor.decompress(bytes, dictionaries: dictionaries) else {
                throw failure(typeName, id, "its compressed payload does not decompress")
            }
            bytes = plain
        }
        return try bytes.withUnsafeBytes { try body($0, resealable) }
    }

    private func failure(_ typeName: String, _ id: String, _ reason: String) -> LocalStorageError {
        .decodingFailed(reason: "\(typeName) \"\(id)\": \(reason)")
    }

    /// What a sealed payload is bound to: seal version, format byte, storage name (length-prefixed, as
    /// names may hold any byte), id.
    static func associatedData(formatByte: UInt8, typeName: String, id: [UInt8]) -> [UInt8] {
        let name = Array(typeName.utf8)
        var out: [UInt8] = [version, formatByte]
        out.reserveCapacity(6 + name.count + id.count)
        out.appendLittleEndian(UInt32(truncatingIfNeeded: name.count))
        out.append(contentsOf: name)
        out.append(contentsOf: id)
        return out
    }
}
