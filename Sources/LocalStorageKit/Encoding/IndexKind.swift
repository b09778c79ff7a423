/// The kind of values an index holds.
enum IndexKind: UInt8, Sendable, Codable {
    case string = 1
    case number = 2
}
