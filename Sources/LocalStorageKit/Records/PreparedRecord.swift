/// A record ready to store: encoded off the writer thread, written on it.
struct PreparedRecord: Sendable {
    let id: String
    let key: [UInt8]
    let payload: [UInt8]
    let format: PayloadFormat
    let version: Int
    let indexValues: [StoredIndexValue]
    /// The value itself, for change streams.
    let value: any Sendable
}
