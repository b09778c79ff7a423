/// A coding key made up by the codec for array indexes, integer keys and the `super` key.
///
/// The index form builds its `"Index N"` string only when someone asks for it.
enum BinaryCodingKey: CodingKey {
    /// A key given by its string.
    case string(String)
    /// A key given by an integer; its string form is the integer's digits.
    case int(Int)
    /// The position of an element in an unkeyed container.
    case index(Int)

    /// The key under which `superEncoder()` and `superDecoder()` store the superclass, as in JSON.
    static let superKey = BinaryCodingKey.string("super")

    /// The key's string form.
    var stringValue: String {
        switch self {
        case .string(let string): string
        case .int(let int): "\(int)"
        case .index(let index): "Index \(index)"
        }
    }

    /// The key's integer form, if it has one.
    var intValue: Int? {
        switch self {
        case .string: nil
        case .int(let int), .index(let int): int
        }
    }

    /// Creates a key from a string.
    init(stringValue: String) {
        self = .string(stringValue)
    }

    /// Creates a key from an integer.
    init(intValue: Int) {
        self = .int(intValue)
    }
}
