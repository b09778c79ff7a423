// TEMPORARY STUB (branch `observe`): stands in for the indexed query API being written on main, so
// that `updates(of:matching:orderedBy:options:)` compiles. Delete this file when merging main.

/// A condition on a declared index (temporary stand-in; see main for the real type).
public enum StorageIndexFilter: Sendable {
    /// The index value equals `value`.
    case equals(String, String)
}

/// The order of a query by a declared index (temporary stand-in; see main for the real type).
public enum StorageIndexSort: Sendable {
    /// Ascending by the named index.
    case ascending(String)
    /// Descending by the named index.
    case descending(String)
}

extension LocalStorage {
    /// The records matching every filter (temporary stand-in: only the unfiltered listing works).
    ///
    /// - Throws: `invalidQuery` for any filter or sort.
    public func fetch<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        guard filters.isEmpty, sort == nil else {
            throw LocalStorageError.invalidQuery("indexed queries are not on this branch yet")
        }
        return try await fetch(T.self, options: options)
    }
}
