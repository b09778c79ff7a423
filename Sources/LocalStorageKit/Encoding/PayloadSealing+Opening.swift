/// Opening a store's sealing: its keys checked against the key check value in `meta` (written, or rewritten
/// to the current key), and its zstd dictionaries opened and resealed with the current key; or, for a
/// salvage, the same from the `meta` entries a walk of a damaged file collected.
extension PayloadSealing {
    /// The sealing an open with `encryption` gets, after checking it against the store's key check value
    /// in `meta` (written when the store has none yet, or rewritten to the current key when it was
    /// sealed with a previous one, unless `readOnly`).
    ///
    /// A store with a key check value holds sealed payloads only (``holdsOnlySealed``). So a key is not
    /// taken by a store that holds records written without one (`holdsRecords`, asked only when the store has
    /// no key check value and a key is given): the open throws, unless `sealingPlainStore`
    /// (``StoreMaintenance/rekey(progress:)``, which seals them and then writes the key check value).
    ///
    /// - Throws: `openFailed` for a key of the wrong length, an encrypted store opened without a key, a
    ///   key that is not the store's, or a key given to a store whose records are not encrypted; nothing else
    ///   is read. ``WriteNeeded`` when `txn` is a read transaction and the open writes (unless `readOnly`).
    static func open(
        encryption: StorageEncryption?, compression: StorageCompression, meta: Database, txn: Transaction,
        path: String, readOnly: Bool = false, sealingPlainStore: Bool = false, holdsRecords: () throws -> Bool,
        storedDictionary: (@Sendable (UInt32) throws -> [UInt8]?)? = nil
    ) throws -> PayloadSealing {
        let stored = try txn.get(meta, key: checkKey).map { Array($0) }
        let keys = try keys(encryption, storedCheck: stored, path: path)
        var writesCheck = false
        if !keys.isEmpty, !readOnly, stored == nil {
            if try holdsRecords() {
                guard sealingPlainStore else {
                    throw LocalStorageError.openFailed(
                        path: path,
                        reason: "the store holds records written without encryption: encrypt them first with "
                            + "`localstorage rekey --new-key-file FILE`, or delete the store")
                }
            } else {
                writesCheck = true
            }
        }
        let dictionaries = PayloadDictionaries()
        let entries = try PayloadDictionaries.storedEntries(meta: meta, txn: txn)
        let (opened, stale) = openDictionaries(entries, keys: keys)
        dictionaries.load(metaEntries: opened)
        let compressor =
            compression.isEnabled
            ? PayloadCompressor(compression, meta: meta, dictionaries: dictionaries, dictionaryKey: keys.first) : nil
        let sealing = PayloadSealing(
            current: keys.first, previous: Array(keys.dropFirst()), compressor: compressor, dictionaries: dictionaries,
            meta: readOnly ? nil : meta, holdsOnlySealed: stored != nil || writesCheck,
            storedDictionary: storedDictionary)
        guard let current = keys.first, !readOnly else { return sealing }
        // A plain store being sealed (a rekey) keeps its dictionaries plain until the transaction that writes
        // its key check value (``sealStaleDictionaries(meta:txn:keys:)``): until then an app without the key
        // still opens the store, and its compressed records need them.
        guard stored != nil || writesCheck else { return sealing }
        let restaled = opened.filter { stale.contains($0.key) }
        let opener = stored.flatMap { check in check.withUnsafeBytes { openCheck($0, keys: keys) } }
        let movesCheck = opener?.bytes != current.bytes
        guard movesCheck || !restaled.isEmpty else { return sealing }
        if txn.isReadOnly { throw WriteNeeded() }
        // Dictionaries stored plain or under a previous key are sealed with the current one.
        for entry in restaled {
            try txn.put(meta, key: entry.key, value: try sealDictionary(entry.value, at: entry.key, key: current))
        }
        if movesCheck { try writeCheck(with: current, meta: meta, txn: txn) }
        return sealing
    }

    /// Thrown by ``open(encryption:compression:meta:txn:path:readOnly:sealingPlainStore:holdsRecords:storedDictionary:)``
    /// in a read transaction when the open writes in `meta` (a key check value to write or move to the current key,
    /// dictionaries to seal with it): the store's open then runs it again in a write transaction.
    struct WriteNeeded: Error {}

    /// Loads the dictionary a compressed payload names when this process does not have it (another process
    /// trained it since this one loaded the store's): read from `meta` and opened with the store's keys. Returns
    /// whether the dictionary is there now.
    func learnDictionary(of compressed: [UInt8]) throws -> Bool {
        guard compressed.count > 4, let storedDictionary else { return false }
        let id = compressed.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        guard id != 0, dictionaries.dictionary(id) == nil, let stored = try storedDictionary(id) else { return false }
        dictionaries.load(
            metaEntries: Self.openDictionaries([(PayloadDictionaries.key(id), stored)], keys: keys).opened)
        return dictionaries.dictionary(id) != nil
    }

    /// Seals with the first of `keys` the dictionaries in `meta` stored plain or under another of them.
    static func sealStaleDictionaries(meta: Database, txn: Transaction, keys: [Key]) throws {
        guard let current = keys.first else { return }
        let (opened, stale) = openDictionaries(try PayloadDictionaries.storedEntries(meta: meta, txn: txn), keys: keys)
        for entry in opened where stale.contains(entry.key) {
            try txn.put(meta, key: entry.key, value: try sealDictionary(entry.value, at: entry.key, key: current))
        }
    }

    /// Writes the key check value of `key` (a constant sealed with it) in `meta`.
    static func writeCheck(with key: Key, meta: Database, txn: Transaction) throws {
        try txn.put(meta, key: checkKey, value: try checkValue(of: key))
    }

    /// The key check value of `key`: a constant sealed with it.
    static func checkValue(of key: Key) throws -> [UInt8] {
        try checkText.withUnsafeBytes { plain in
            try checkKey.withUnsafeBytes { associated in
                try SodiumCipher.seal(plain, associated: associated, key: key.cipher, prefix: [version, key.id])
            }
        }
    }

    /// A key check value of the current key (for a shared tier's namespace), or nil without a key.
    func keyCheckValue() throws -> [UInt8]? { try current.map { try Self.checkValue(of: $0) } }

    /// Whether `stored` is a key check value that one of this store's keys opens.
    func opensKeyCheck(_ stored: [UInt8]) -> Bool {
        !keys.isEmpty && stored.withUnsafeBytes { Self.openCheck($0, keys: keys) } != nil
    }

    /// The sealing that reads the records of a damaged store whose `meta` entries a salvage walk collected
    /// (its dictionaries, and its key check value when that could be read); it compresses nothing.
    ///
    /// - Throws: `openFailed` for an encrypted store salvaged without a key, or with a key that is not the
    ///   store's.
    static func forSalvage(
        encryption: StorageEncryption?, metaEntries: [(key: [UInt8], value: [UInt8])], path: String
    ) throws -> PayloadSealing {
        let stored = metaEntries.first { $0.key == checkKey }?.value
        let keys = try keys(encryption, storedCheck: stored, path: path)
        let dictionaries = PayloadDictionaries()
        dictionaries.load(metaEntries: openDictionaries(metaEntries, keys: keys).opened)
        return PayloadSealing(
            current: keys.first, previous: Array(keys.dropFirst()), compressor: nil, dictionaries: dictionaries,
            holdsOnlySealed: stored != nil)
    }

    /// The keys of `encryption`, the current one first (none without encryption), after checking them
    /// against the store's key check value `storedCheck`.
    ///
    /// - Throws: `openFailed` for a key of the wrong length, an encrypted store opened without a key, or a
    ///   key that is not the store's.
    private static func keys(
        _ encryption: StorageEncryption?, storedCheck stored: [UInt8]?, path: String
    ) throws -> [Key] {
        guard let encryption else {
            if stored != nil {
                throw LocalStorageError.openFailed(
                    path: path,
                    reason: "the store is encrypted: open it with its key (configuration.encryption, or --key-file)")
            }
            return []
        }
        if let problem = encryption.problem { throw LocalStorageError.openFailed(path: path, reason: problem) }
        let keys = ([encryption.key] + encryption.previousKeys).map {
            Key(id: SodiumCipher.keyID(Array($0)), cipher: SodiumCipher.Key(Array($0)))
        }
        if let stored, stored.withUnsafeBytes({ openCheck($0, keys: keys) }) == nil {
            throw LocalStorageError.openFailed(
                path: path,
                reason: "the encryption key is not this store's key"
                    + (encryption.previousKeys.isEmpty ? "" : ", nor is any of the previous keys"))
        }
        return keys
    }

    /// Why an open with `encryption` would not take a store whose key check value is `stored` (nil: none), read
    /// without anything else, or nil when it would: its key (or a previous one) opens the check value, or neither
    /// has one. A key given to a store without a check value counts as not taken (the open takes it only when the
    /// store holds no record, which this does not look at). Compaction asks this first, so that an open or a
    /// command the key check refuses leaves the file as it was.
    static func refusal(storedCheck stored: [UInt8]?, encryption: StorageEncryption?) -> String? {
        if let problem = encryption?.problem { return problem }
        guard let stored else {
            return encryption == nil ? nil : "a key given to a store without one yet (a later open compacts it)"
        }
        do {
            _ = try keys(encryption, storedCheck: stored, path: "")
            return nil
        } catch LocalStorageError.openFailed(_, let reason) {
            return reason
        } catch {
            return "\(error)"
        }
    }

    /// The dictionary entries with each dictionary opened (`keys` first among them the current one), and
    /// the keys of those that are not sealed with the current key. A dictionary no key opens is left out:
    /// the records compressed with it fail to read with `decodingFailed`, and `verify` names them.
    private static func openDictionaries(
        _ entries: [(key: [UInt8], value: [UInt8])], keys: [Key]
    ) -> (opened: [(key: [UInt8], value: [UInt8])], stale: Set<[UInt8]>) {
        var opened: [(key: [UInt8], value: [UInt8])] = []
        var stale: Set<[UInt8]> = []
        for entry in entries {
            let isDictionary =
                entry.key.starts(with: PayloadDictionaries.keyPrefix)
                && entry.key.count == PayloadDictionaries.keyPrefix.count + 4
            guard isDictionary, !PayloadDictionaries.isPlain(entry.value) else {
                if isDictionary, !keys.isEmpty { stale.insert(entry.key) }
                opened.append(entry)
                continue
            }
            guard entry.value.count > 2, entry.value[0] == version else { continue }
            let sealed = entry.value[2...]
            let found = firstOpening(keys, named: entry.value[1]) { key in
                sealed.withUnsafeBytes { SodiumCipher.open($0, associated: entry.key, key: key.cipher) }
            }
            guard let found else { continue }
            opened.append((entry.key, found.opened))
            if found.key.bytes != keys.first?.bytes { stale.insert(entry.key) }
        }
        return (opened, stale)
    }

    /// A dictionary sealed with `key`, bound to its place in `meta`, `metaKey` (`zdict.` ‖ id).
    static func sealDictionary(
        _ bytes: [UInt8], at metaKey: [UInt8], key: Key
    ) throws(LocalStorageError) -> [UInt8] {
        let result: Result<[UInt8], LocalStorageError> = bytes.withUnsafeBytes { plain in
            metaKey.withUnsafeBytes { associated in
                Result { () throws(LocalStorageError) in
                    try SodiumCipher.seal(plain, associated: associated, key: key.cipher, prefix: [version, key.id])
                }
            }
        }
        return try result.get()
    }

    /// The key among `keys` that opens a key check value, or nil.
    private static func openCheck(_ stored: UnsafeRawBufferPointer, keys: [Key]) -> Key? {
        guard stored.count > 2, stored[0] == PayloadSealing.version else { return nil }
        let sealed = UnsafeRawBufferPointer(rebasing: stored[2...])
        return firstOpening(keys, named: stored[1]) { key -> Bool? in
            let plain = SodiumCipher.open(sealed, associated: PayloadSealing.checkKey, key: key.cipher)
            return plain == PayloadSealing.checkText ? true : nil
        }?.key
    }
}
