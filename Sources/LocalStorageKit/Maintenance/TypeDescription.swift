/// A stored type as the store's `meta` database declares it: its indexes and schema version.
@_spi(Maintenance) public struct TypeDescription: Codable, Sendable, Equatable {
    /// One declared index.
    public struct Index: Codable, Sendable, Equatable {
        /// The index name.
        public var name: String
        /// `"string"` or `"number"`.
        public var kind: String
    }

    /// The type's storage name.
    public var name: String
    /// The schema version new records of the type are written at.
    public var version: Int
    /// The signature of the index declaration (changes when indexes change).
    public var signature: UInt64
    /// The declared indexes, in declaration order.
    public var indexes: [Index]

    private enum CodingKeys: String, CodingKey {
        case name = "type"
        case version, signature, indexes
    }

    init(_ info: TypeInfo) {
        name = info.name
        version = info.version
        signature = info.signature
        indexes = info.indexes.map { Index(name: $0.name, kind: $0.kind.name) }
    }

    /// The `meta` form, or nil when an index kind is neither `"string"` nor `"number"`.
    var typeInfo: TypeInfo? {
        var entries: [IndexDeclaration.Entry] = []
        for index in indexes {
            guard let kind = IndexKind(name: index.kind) else { return nil }
            entries.append(IndexDeclaration.Entry(name: index.name, kind: kind))
        }
        // Numbers are the store's own: the store allocates them when the import registers the type.
        return TypeInfo(
            name: name, number: 0, indexes: entries, signature: signature, version: version, slots: [],
            declarations: [])
    }
}

extension IndexKind {
    /// `"string"` or `"number"`, as maintenance output spells the kind.
    var name: String {
        switch self {
        case .string: "string"
        case .number: "number"
        }
    }

    /// The kind spelled `name`, or nil.
    init?(name: String) {
        switch name {
        case "string": self = .string
        case "number": self = .number
        default: return nil
        }
    }
}
