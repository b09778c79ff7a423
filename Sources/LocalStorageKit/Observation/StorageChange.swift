/// One committed change to a stored type, as ``LocalStorage/changes(of:)`` delivers it.
///
/// ```swift
/// for await change in storage.changes(of: TaskItem.self) {
///     if case .inserted(let task) = change { print("Created task: \(task.title)") }
/// }
/// ```
public enum StorageChange<T: Sendable>: Sendable {
    /// A record was saved for the first time (or after it had expired).
    case inserted(T)
    /// An existing record was saved again or updated.
    case updated(T)
    /// A record was deleted.
    case deleted(id: String)
    /// An expired record was purged.
    case expired(id: String)
    /// Every record of the type was deleted (``LocalStorage/deleteAll(_:)``).
    case cleared
}

extension StorageChange: Equatable where T: Equatable {}

extension PublishedChange {
    /// The change typed for an observer of `T`; nil when the value is of another Swift type or the
    /// change is not one a change stream reports (``Kind/touched``).
    func typed<T: Sendable>(as type: T.Type) -> StorageChange<T>? {
        switch kind {
        case .inserted(let value): (value as? T).map(StorageChange.inserted)
        case .updated(let value): (value as? T).map(StorageChange.updated)
        case .deleted(let id): .deleted(id: id)
        case .expired(let id): .expired(id: id)
        case .cleared: .cleared
        case .touched, .externalInserted, .externalUpdated: nil
        }
    }
}
