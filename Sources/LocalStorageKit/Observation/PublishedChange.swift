/// A change as the writer publishes it, before it is typed for each observer.
struct PublishedChange: Sendable {
    enum Kind: Sendable {
        case inserted(any Sendable)
        case updated(any Sendable)
        case deleted(String)
        case expired(String)
        case cleared
        /// The type's records changed in a way a change stream does not describe (a new expiration):
        /// live queries rerun, change streams stay silent.
        case touched
        /// Another process inserted or updated the record with this id: observers read its value.
        case externalInserted(String)
        case externalUpdated(String)
    }

    let typeName: String
    let kind: Kind
    /// The record's index values before and after the change (nil: no record there), when the writer
    /// knows them; a live query whose conditions neither side meets need not rerun. Nil when unknown.
    var region: Region?

    struct Region: Sendable {
        let old: [StoredIndexValue]?
        let new: [StoredIndexValue]?
        /// The index declaration both were computed with: a query of another declaration (an index it adds) cannot
        /// tell from them whether the record matches.
        let signature: UInt64
    }

    /// The key (the id's UTF-8) of the one record an `.inserted`, `.updated` or `.touched` change is about, when
    /// the writer knows it: a watch of another record need not wake (nil: it may concern any record).
    let recordKey: [UInt8]?

    init(typeName: String, kind: Kind, region: Region? = nil, recordKey: [UInt8]? = nil) {
        self.typeName = typeName
        self.kind = kind
        self.region = region
        self.recordKey = recordKey
    }
}
