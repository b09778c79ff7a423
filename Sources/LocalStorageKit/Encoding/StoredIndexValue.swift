/// One index value as a record header stores it.
struct StoredIndexValue: Equatable, Sendable {
    let name: String
    let kind: IndexKind
    /// A string's UTF-8, or a number's 11-byte ordered key.
    let bytes: [UInt8]
}
