extension PublishedChange {
    /// What another process's change-log entry (of the type called `typeName`) publishes to this process's
    /// observers: the id it names (observers read the value), and for a new expiry the record's key, so that the
    /// watches of other records sleep on.
    init(otherProcesss entry: ChangeLog.Entry, typeName: String) {
        let id = String(decoding: entry.id, as: UTF8.self)
        let kind: Kind =
            switch entry.kind {
            case .inserted: .externalInserted(id)
            case .updated: .externalUpdated(id)
            case .deleted: .deleted(id)
            case .expired: .expired(id)
            case .cleared: .cleared
            case .touched: .touched
            }
        self.init(
            typeName: typeName, kind: kind, recordKey: entry.kind == .touched && !entry.id.isEmpty ? entry.id : nil)
    }
}
