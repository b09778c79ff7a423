/// A bound of a condition in both of the forms it is compared in.
struct QueryBound: Sendable {
    /// The ordered key encoding (what index keys hold).
    let key: [UInt8]
    /// The form a record header stores: a string's UTF-8, a number's ordered key.
    let value: [UInt8]

    init(_ value: IndexValue) throws(LocalStorageError) {
        guard let key = value.keyBytes, let stored = value.storedBytes else {
            throw .invalidQuery("NaN cannot be compared; use a number")
        }
        self.key = key
        self.value = stored
    }
}
