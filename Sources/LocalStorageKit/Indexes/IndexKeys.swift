/// Index-key constants shared by writers and queries.
enum IndexKeys {
    /// The key of a record that has no value for an index. It sorts before every value's encoding
    /// (strings start `00 01`/`00 FF` or a nonzero byte, numbers with a tag ≥ `0x10`), so such records
    /// come first ascending and last descending, and a walk over values starts after it.
    static let missing: [UInt8] = [0x00, 0x00]
    /// The smallest key a value can have.
    static let firstValue: [UInt8] = [0x00, 0x01]

    /// Whether `key` is ``missing``, the key of records with no value.
    @inline(__always)
    static func isMissing(_ key: UnsafeRawBufferPointer) -> Bool {
        key.count == 2 && key[0] == 0 && key[1] == 0
    }

    /// Whether a string index key was cut at the budget (its full value lives in the record header).
    @inline(__always)
    static func isCut(_ key: UnsafeRawBufferPointer, kind: IndexKind) -> Bool {
        kind == .string && key.count >= 2 && key[key.count - 2] == 0 && key[key.count - 1] == 2
    }
}
