/// What the `meta` database says about one stored type (JSON, under `t.` ‖ the storage name's UTF-8).
///
/// Every type has a number, allocated once, and so has every (index name, kind) pair it ever declared:
/// databases are named by these numbers (see ``TypeSchema``), so user names never reach an LMDB name.
/// Index numbers are never reused, and their databases are never dropped: another schema or another
/// process may hold their handles. `declarations` keeps every declaration records may have been indexed
/// with, by signature, so that any process can tell which entries a record has.
struct TypeInfo: Codable, Sendable, Equatable {
    /// One (name, kind) pair the type declared at some point, and its database number.
    struct Slot: Codable, Sendable, Equatable {
        let name: String
        let kind: IndexKind
        let number: UInt32
    }

    /// A declaration records may have been indexed with: its slots in declaration order.
    struct Declaration: Codable, Sendable, Equatable {
        let signature: UInt64
        let slots: [UInt32]
    }

    var name: String
    var number: UInt32
    /// The declaration registered last, in declaration order (what the CLI shows).
    var indexes: [IndexDeclaration.Entry]
    var signature: UInt64
    /// The schema version every record is known to be at or above (moves once all are migrated).
    var version: Int
    var slots: [Slot]
    var declarations: [Declaration]

    static let keyPrefix: [UInt8] = Array("t.".utf8)

    /// The databases the type has in a store: records, update times, signatures, expiries and one per slot.
    var databaseCount: Int { 4 + slots.count }

    /// The `meta` key of the type called `name`: the prefix and the name's bytes, whatever they are.
    static func key(_ name: String) -> [UInt8] { keyPrefix + Array(name.utf8) }

    /// The slot of (`name`, `kind`), if the type ever declared it. Names compare by their UTF-8 bytes:
    /// two names that differ in any byte never share a slot.
    func slot(named name: String, kind: IndexKind) -> Slot? {
        slots.first { $0.kind == kind && $0.name.utf8.elementsEqual(name.utf8) }
    }

    /// The slots of the declaration with `signature`, in order, or nil when it is not recorded.
    func slots(ofSignature signature: UInt64) -> [Slot]? {
        guard let declaration = declarations.first(where: { $0.signature == signature }) else { return nil }
        var result: [Slot] = []
        for number in declaration.slots {
            guard let slot = slots.first(where: { $0.number == number }) else { return nil }
            result.append(slot)
        }
        return result
    }

    /// The entries of the declaration with `signature`, or nil when it is not recorded.
    func declaration(ofSignature signature: UInt64) -> IndexDeclaration? {
        slots(ofSignature: signature).map { IndexDeclaration(entries: $0.map { .init(name: $0.name, kind: $0.kind) }) }
    }
}
