/// A run of index keys to walk: from `lower` up to `upper` (both inclusive), or every key with `prefix`.
struct KeyInterval: Sendable {
    var lower: [UInt8]
    var upper: [UInt8]?
    var prefix: [UInt8]?
}
