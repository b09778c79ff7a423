import Foundation

/// Everything LocalStorageKit throws.
///
/// Cases carry enough to say what went wrong in one line; ``description`` does.
public enum LocalStorageError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The record does not exist (or has expired) and the call needs one.
    case notFound(id: String)
    /// A stored payload could not be decoded as the requested type, or a stored record is damaged.
    case decodingFailed(reason: String)
    /// A value could not be encoded.
    case encodingFailed(reason: String)
    /// A migration chain step is missing, threw, or produced a payload that does not decode.
    case migrationFailed(from: Int, to: Int, underlying: any Error)
    /// A filter or sort names an index the type does not declare.
    case unknownIndex(String)
    /// A query is malformed: wrong value kind for an index, NaN, a page below 1, ….
    case invalidQuery(String)
    /// An id is empty or too long for an LMDB key (511 bytes of UTF-8).
    case invalidId(String)
    /// A type's declaration cannot be stored: an empty or over-long name, two indexes with one name, or
    /// more indexes or types than the store can hold. Thrown on the type's first use, naming the type.
    case invalidDeclaration(String)
    /// A ``StorageChangeToken`` is older than the change log keeps (see
    /// ``LocalStorageConfiguration/changeLogRetention``), or belongs to another store (one deleted and
    /// created again since, say): reload in full and take a new token.
    case changeTokenExpired
    /// The store cannot grow: its memory map reached ``LocalStorageConfiguration/maxMapSize``, or the disk
    /// holding it is full. The description names both; the store's logger gets an error message saying which.
    /// Deletes, purges and evictions still succeed in a full map.
    case storageFull
    /// The store could not be opened (not an LMDB store, damaged, no permission, …).
    case openFailed(path: String, reason: String)
    /// LMDB reported an error: its code, its message and the failing call.
    case storageError(code: Int32, message: String)
    /// The shared tier (``SharedTierConfiguration``) could not be reached or refused a command; the message
    /// says what failed (never the password). A write that throws it changed nothing; a read that throws it
    /// found no local copy to serve.
    case sharedTierUnavailable(String)
    /// The store was closed: it cannot be used any more. Open it again.
    case closed
    /// A load through the cache (``LocalStorage/fetch(_:id:policy:load:)``) took longer than its
    /// ``LoadPolicy/loadTimeout``, or its loader fetched the same id through the cache (which would wait for
    /// itself); the id is the one being loaded.
    case loadTimedOut(id: String)
    /// A record can never fit a `maxBytes` limit: its payload alone is larger. Nothing was written or evicted.
    case recordTooLarge(id: String, size: Int, limit: Int)
    /// An expiration that is not a finite time a store can keep (NaN, infinite, or out of range).
    case invalidExpiration(String)

    /// A one-line explanation of the error, naming the id, index, version or path involved.
    public var description: String {
        switch self {
        case .notFound(let id): "No record with id \"\(id)\" (absent or expired)"
        case .decodingFailed(let reason): "Decoding failed: \(reason)"
        case .encodingFailed(let reason): "Encoding failed: \(reason)"
        case .migrationFailed(let from, let to, let underlying):
            "Migration from version \(from) to \(to) failed: \(underlying)"
        case .unknownIndex(let name): "Unknown index \"\(name)\""
        case .invalidQuery(let reason): "Invalid query: \(reason)"
        case .invalidId(let reason): "Invalid id: \(reason)"
        case .invalidDeclaration(let reason): "Invalid declaration: \(reason)"
        case .changeTokenExpired:
            "The change token is older than the change log keeps, ahead of this store's changes, or not from this store: reload in full and take a new token"
        case .storageFull:
            "The store is full: either its memory map reached maxMapSize or the disk holding it has no space "
                + "left. Delete or purge records, raise maxMapSize, or free disk space"
        case .openFailed(let path, let reason): "Cannot open the store at \(path): \(reason)"
        case .storageError(let code, let message): "Storage error \(code): \(message)"
        case .sharedTierUnavailable(let reason): "The shared tier is unavailable: \(reason)"
        case .closed: "The store is closed: open it again to use it"
        case .loadTimedOut(let id):
            "Loading \"\(id)\" did not finish within this caller's load timeout (or its loader asked the cache for "
                + "the same id, which would never finish)"
        case .recordTooLarge(let id, let size, let limit):
            "The record \"\(id)\" (\(size) bytes) can never fit the limit of \(limit) bytes: nothing was written"
        case .invalidExpiration(let reason): "Invalid expiration: \(reason)"
        }
    }

    /// Cases are equal when they are the same case with the same values; underlying migration errors
    /// compare by their description.
    public static func == (lhs: LocalStorageError, rhs: LocalStorageError) -> Bool {
        switch (lhs, rhs) {
        case (.notFound(let a), .notFound(let b)): a == b
        case (.decodingFailed(let a), .decodingFailed(let b)): a == b
        case (.encodingFailed(let a), .encodingFailed(let b)): a == b
        case (.migrationFailed(let fromA, let toA, let errorA), .migrationFailed(let fromB, let toB, let errorB)):
            fromA == fromB && toA == toB && String(describing: errorA) == String(describing: errorB)
        case (.unknownIndex(let a), .unknownIndex(let b)): a == b
        case (.invalidQuery(let a), .invalidQuery(let b)): a == b
        case (.invalidId(let a), .invalidId(let b)): a == b
        case (.invalidDeclaration(let a), .invalidDeclaration(let b)): a == b
        case (.changeTokenExpired, .changeTokenExpired): true
        case (.storageFull, .storageFull): true
        case (.openFailed(let pathA, let reasonA), .openFailed(let pathB, let reasonB)):
            pathA == pathB && reasonA == reasonB
        case (.storageError(let codeA, let messageA), .storageError(let codeB, let messageB)):
            codeA == codeB && messageA == messageB
        case (.sharedTierUnavailable(let a), .sharedTierUnavailable(let b)): a == b
        case (.closed, .closed): true
        case (.loadTimedOut(let a), .loadTimedOut(let b)): a == b
        case (.recordTooLarge(let idA, let sizeA, let limitA), .recordTooLarge(let idB, let sizeB, let limitB)):
            idA == idB && sizeA == sizeB && limitA == limitB
        case (.invalidExpiration(let a), .invalidExpiration(let b)): a == b
        default: false
        }
    }
}

extension LocalStorageError: LocalizedError {
    /// The same one-line message as ``description``, so that `localizedDescription` says what went wrong (on
    /// Linux it otherwise gives only the type's name and the case's number).
    public var errorDescription: String? { description }
}
