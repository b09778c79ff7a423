/// One index value as a record header stores it.
struct StoredIndexValue: Sendable {
    let name: String
    let kind: IndexKind
    /// A string's UTF-8, or a number's 11-byte ordered key.
    let bytes: [UInt8]
    /// The number of the index's slot in the type's description (``TypeInfo/Slot``), when known: a compact
    /// header (``RecordLayout/compact``) stores the slot instead of the name.
    var slot: UInt32? = nil
}

extension StoredIndexValue: Equatable {
    /// Two values are equal when name, kind and bytes are: a value read from a compact header (its slot known)
    /// equals the same value computed from the model.
    static func == (a: StoredIndexValue, b: StoredIndexValue) -> Bool {
        a.kind == b.kind && a.name == b.name && a.bytes == b.bytes
    }
}
