import CLMDB

/// The open databases of one stored type.
///
/// Names on disk: `r.<type>` records (key id), `u.<type>` update times (key updatedAt, sorted duplicate
/// ids), `e.<type>` expiry times (key expiresAt, sorted duplicate ids), `i.<type>.<index>` one per index
/// (key ordered value, sorted duplicate ids).
struct TypeSchema: Sendable {
    struct Index: Sendable {
        let name: String
        let nameBytes: [UInt8]
        let kind: IndexKind
        let dbi: MDB_dbi
    }

    let name: String
    let records: MDB_dbi
    let updated: MDB_dbi
    let expiry: MDB_dbi
    let indexes: [Index]
    let declaration: IndexDeclaration
    let version: Int

    var signature: UInt64 { declaration.signature }

    /// The index called `name`, or nil.
    func index(named name: String) -> Index? { indexes.first { $0.name == name } }

    static func recordsName(_ type: String) -> String { "r.\(type)" }
    static func updatedName(_ type: String) -> String { "u.\(type)" }
    static func expiryName(_ type: String) -> String { "e.\(type)" }
    static func indexName(_ type: String, _ index: String) -> String { "i.\(type).\(index)" }
    static let duplicateFlags = MDB_DUPSORT

    /// Opens (creating) the databases of `name` with `declaration` in a write transaction.
    static func open(_ name: String, declaration: IndexDeclaration, version: Int,
                     in txn: Transaction) throws -> TypeSchema {
        func open(_ dbName: String, _ flags: Int32) throws -> MDB_dbi {
            guard let dbi = try txn.openDatabase(dbName, flags: flags, create: true) else {
                throw LMDBError(code: MDB_NOTFOUND, call: "mdb_dbi_open", caller: #function)
            }
            return dbi
        }
        let indexes = try declaration.entries.map { entry in
            Index(name: entry.name, nameBytes: Array(entry.name.utf8), kind: entry.kind,
                  dbi: try open(indexName(name, entry.name), duplicateFlags))
        }
        return TypeSchema(name: name, records: try open(recordsName(name), 0),
                          updated: try open(updatedName(name), duplicateFlags),
                          expiry: try open(expiryName(name), duplicateFlags),
                          indexes: indexes, declaration: declaration, version: version)
    }
}

/// What the `meta` database says about one stored type (JSON, under `type.<name>`).
struct TypeInfo: Codable, Sendable, Equatable {
    var name: String
    var indexes: [IndexDeclaration.Entry]
    var signature: UInt64
    var version: Int

    static func key(_ name: String) -> [UInt8] { Array("type.\(name)".utf8) }
    static let keyPrefix: [UInt8] = Array("type.".utf8)
}
