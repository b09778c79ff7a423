/// One declared index of a ``LocalStorageIndexed`` type: a name and how to read the value.
///
/// ```swift
/// static var storageIndexes: [StorageIndex<User>] {
///     [
///         .string("role") { $0.role.rawValue },
///         .number("age") { $0.age },
///         StorageIndex("email", \.email),
///     ]
/// }
/// ```
/// A closure or key path that returns nil means the record is not indexed on that index: it never
/// matches a condition on it, and sorts first ascending, last descending.
///
/// Stored records are re-indexed when an index is added, removed, reordered or changes kind, not when the key
/// path or closure behind a name changes: give an index whose value is computed differently a new name.
public struct StorageIndex<T>: Sendable {
    /// The index name used in filters and sorts.
    public let name: String
    let kind: IndexKind
    let extract: @Sendable (T) -> IndexValue?
    /// The offset of the stored property a key-path index reads in place, nil when it projects its key path or
    /// calls a closure (tests tell the paths apart by it).
    let propertyOffset: Int?

    init(
        name: String, kind: IndexKind, propertyOffset: Int? = nil, extract: @escaping @Sendable (T) -> IndexValue?
    ) {
        self.name = name
        self.kind = kind
        self.propertyOffset = propertyOffset
        self.extract = extract
    }

    /// A string index computed by a closure.
    public static func string(_ name: String, _ value: @escaping @Sendable (T) -> String?) -> StorageIndex {
        StorageIndex(name: name, kind: .string) { value($0).map(IndexValue.string) }
    }

    /// A number index computed by a closure.
    public static func number<N: StorageIndexNumber>(
        _ name: String, _ value: @escaping @Sendable (T) -> N?
    ) -> StorageIndex {
        StorageIndex(name: name, kind: .number) { value($0).map { .number($0.storageNumber.value) } }
    }

    /// A string index on a property.
    public init(_ name: String, _ keyPath: KeyPath<T, String> & Sendable) {
        let (offset, read) = Self.reader(keyPath)
        self.init(name: name, kind: .string, propertyOffset: offset) { .string(read($0)) }
    }

    /// A string index on an optional property.
    public init(_ name: String, _ keyPath: KeyPath<T, String?> & Sendable) {
        let (offset, read) = Self.reader(keyPath)
        self.init(name: name, kind: .string, propertyOffset: offset) { read($0).map(IndexValue.string) }
    }

    /// A number index on a property.
    public init<N: StorageIndexNumber>(_ name: String, _ keyPath: KeyPath<T, N> & Sendable) {
        let (offset, read) = Self.reader(keyPath)
        self.init(name: name, kind: .number, propertyOffset: offset) { .number(read($0).storageNumber.value) }
    }

    /// A number index on an optional property.
    public init<N: StorageIndexNumber>(_ name: String, _ keyPath: KeyPath<T, N?> & Sendable) {
        let (offset, read) = Self.reader(keyPath)
        self.init(name: name, kind: .number, propertyOffset: offset) {
            read($0).map { .number($0.storageNumber.value) }
        }
    }

    /// How to read the property `keyPath` names: in place at its offset when it is stored inline
    /// (``MemoryLayout/offset(of:)`` is nil for computed properties and anything behind a class reference), where
    /// projecting a key path walks its components through the runtime for every value; else through the key path.
    private static func reader<V>(
        _ keyPath: KeyPath<T, V> & Sendable
    ) -> (offset: Int?, read: @Sendable (T) -> V) {
        guard let offset = MemoryLayout<T>.offset(of: keyPath) else { return (nil, { $0[keyPath: keyPath] }) }
        return (
            offset,
            { value in withUnsafePointer(to: value) { UnsafeRawPointer($0).load(fromByteOffset: offset, as: V.self) } }
        )
    }
}

/// A ``LocalStorable`` type with declared indexes that queries filter, order and count on.
///
/// Up to 64 indexes per type; each record stores a signature of the declaration, and after a
/// change the first query of the type re-indexes the records that are stale.
public protocol LocalStorageIndexed: LocalStorable {
    /// The indexes of this type, in declaration order.
    static var storageIndexes: [StorageIndex<Self>] { get }
}
