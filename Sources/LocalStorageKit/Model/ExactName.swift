/// A name compared by its UTF-8 bytes, for dictionaries of stored names.
///
/// The store keys types, records and index entries by bytes, so "café" written with `é` and with `e` and a
/// combining accent are two types or two ids. Swift's `String` compares the two as equal (canonical
/// equivalence): a `[String: …]` of stored names would fold them into one entry and lose the other
/// (`statistics()` totals, `localstorage export`).
struct ExactName: Hashable, Sendable, Comparable {
    let name: String

    init(_ name: String) { self.name = name }

    static func == (lhs: ExactName, rhs: ExactName) -> Bool { lhs.name.utf8.elementsEqual(rhs.name.utf8) }

    func hash(into hasher: inout Hasher) {
        // The same bytes hash the same way whether the string's storage is contiguous or not.
        let hashed: Void? = name.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            Array(name.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// By the names' order, then by their bytes (two canonically equivalent names keep one order).
    static func < (lhs: ExactName, rhs: ExactName) -> Bool {
        if lhs.name != rhs.name { return lhs.name < rhs.name }
        return lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }
}
