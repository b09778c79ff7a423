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
    /// The type's other index declarations records may be indexed with (an app and its extension, or two
    /// versions of an app, may declare different indexes): what ``signature`` and ``indexes`` say is the
    /// declaration registered last. Empty in an export's header, which names the newest declaration alone.
    public var otherDeclarations: [Declaration] = []

    /// An index declaration other than the type's last registered one.
    public struct Declaration: Codable, Sendable, Equatable {
        /// Its signature.
        public var signature: UInt64
        /// Its indexes, in declaration order.
        public var indexes: [Index]
    }

    private enum CodingKeys: String, CodingKey {
        case name = "type"
        case version, signature, indexes, otherDeclarations
    }

    init(_ info: TypeInfo, withOtherDeclarations: Bool = false) {
        name = info.name
        version = info.version
        signature = info.signature
        indexes = info.indexes.map { Index(name: $0.name, kind: $0.kind.name) }
        guard withOtherDeclarations else { return }
        for declaration in info.declarations where declaration.signature != info.signature {
            guard let slots = info.slots(ofSignature: declaration.signature) else { continue }
            otherDeclarations.append(
                Declaration(
                    signature: declaration.signature,
                    indexes: slots.map { Index(name: $0.name, kind: $0.kind.name) }))
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        version = try container.decode(Int.self, forKey: .version)
        signature = try container.decode(UInt64.self, forKey: .signature)
        indexes = try container.decode([Index].self, forKey: .indexes)
        otherDeclarations = try container.decodeIfPresent([Declaration].self, forKey: .otherDeclarations) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(version, forKey: .version)
        try container.encode(signature, forKey: .signature)
        try container.encode(indexes, forKey: .indexes)
        // An export's header keeps the form older versions read.
        if !otherDeclarations.isEmpty { try container.encode(otherDeclarations, forKey: .otherDeclarations) }
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
