/// Telling another program's LMDB environment from a store of this library, which an open must refuse before it
/// writes anything into it (API.md: such a folder "is refused by the library and the CLI alike").
extension TypeRegistry {
    /// How ``checkLayout(meta:txn:countTree:upgradeTo:mayUpgrade:)``'s refusal of another program's LMDB environment
    /// begins (``isForeignStoreRefusal(_:)``).
    static let foreignStoreReason = "not a LocalStorageKit store: "

    /// The refusal of an LMDB environment with nothing in it, by an open that must not make a store there
    /// (``LocalStorageConfiguration/requiresExistingStore``).
    static let emptyEnvironmentRefusal = LocalStorageError.decodingFailed(
        reason: foreignStoreReason
            + "an empty LMDB environment, with no meta database; its data file was left untouched")

    /// The refusal of another program's LMDB environment whose main database holds `names`.
    static func foreignRefusal(_ names: [String]) -> LocalStorageError {
        .decodingFailed(
            reason: foreignStoreReason + "an LMDB environment whose main database holds "
                + names.map { "\"\($0)\"" }.joined(separator: ", ")
                + " and no layout marker; its data file was left untouched (LMDB's lock file is every "
                + "opener's to reset)")
    }

    /// Refuses another program's LMDB environment before an open creates anything in it. A store of this library
    /// has `meta` from its first commit on (made in one transaction with the change log and the leases), so a
    /// main database that names anything while `meta` is missing, or that holds `meta` as a plain entry, is
    /// another program's, even when its names are ones this library uses (`changes`, `counts`: such a folder was
    /// taken over, `meta` and the layout marker written into it, found by a new-user trial, /work/trial82.md).
    ///
    /// - Throws: ``foreignRefusal(_:)``'s error.
    static func refuseForeignEnvironment(txn: Transaction) throws {
        let hasMeta: Bool
        do {
            hasMeta = try txn.openDatabase(metaName, create: false) != nil
        } catch let error as LMDBError where error.isIncompatible {
            throw foreignRefusal(try mainNames(txn: txn))
        }
        guard !hasMeta else { return }
        let names = try mainNames(txn: txn)
        if !names.isEmpty { throw foreignRefusal(names) }
    }

    /// The first three names of the main database that `keep` keeps (all of them without one).
    private static func mainNames(txn: Transaction, keeping keep: (String) -> Bool = { _ in true }) throws -> [String] {
        try txn.withCursor(.main) { cursor in
            var names: [String] = []
            var entry = try cursor.move(.first)
            while let current = entry, names.count < 3 {
                let name = String(decoding: current.key, as: UTF8.self)
                if keep(name) { names.append(name) }
                entry = try cursor.move(.next)
            }
            return names
        }
    }

    /// Whether `error` is the refusal of another program's LMDB environment: the opener then leaves nothing of
    /// its own in that folder.
    static func isForeignStoreRefusal(_ error: any Error) -> Bool {
        guard case LocalStorageError.decodingFailed(let reason) = error else { return false }
        return reason.hasPrefix(foreignStoreReason)
    }

    /// Up to three keys of LMDB's main database that are not the name of a database LocalStorageKit makes.
    static func foreignNames(txn: Transaction) throws -> [String] {
        let own = Set(storeWideNames)
        func isOwn(_ name: String) -> Bool {
            if own.contains(name) { return true }
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard let first = parts.first, parts.dropFirst().allSatisfy({ UInt32($0) != nil }) else { return false }
            return (["r", "u", "e", "s"].contains(first) && parts.count == 2) || (first == "i" && parts.count == 3)
        }
        return try mainNames(txn: txn) { !isOwn($0) }
    }
}
