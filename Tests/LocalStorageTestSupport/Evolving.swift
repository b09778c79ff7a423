import Foundation
import LocalStorageKit

/// The fields every declaration of an ``Evolving`` record reads.
public protocol EvolvingFields: LocalStorable {
    var a: Int? { get }
    var b: String? { get }
    var c: Int? { get }
}

/// One way to declare the indexes of an evolving type.
public protocol EvolvingDeclaration: Sendable {
    /// The declaration's (name, kind) pairs, for a reference model.
    static var description: [(name: String, isNumber: Bool)] { get }
    static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>]
}

/// A storage name an ``Evolving`` type is stored under.
public protocol EvolvingName: Sendable {
    static var name: String { get }
}

/// A record of one stored type whose index declaration differs between Swift types: an app's old and new
/// versions, or an app and its extension, sharing one store.
public struct Evolving<Name: EvolvingName, Declaration: EvolvingDeclaration>: EvolvingFields, LocalStorageIndexed,
    Equatable
{
    public let id: String
    public var a: Int?
    public var b: String?
    public var c: Int?

    public init(id: String, a: Int?, b: String?, c: Int?) {
        self.id = id
        self.a = a
        self.b = b
        self.c = c
    }

    public static var storageName: String { Name.name }
    public static var storageIndexes: [StorageIndex<Self>] { Declaration.indexes(Self.self) }
}

/// `[.number("a"), .string("b")]`
public enum DeclarationAB: EvolvingDeclaration {
    public static let description = [(name: "a", isNumber: true), (name: "b", isNumber: false)]
    public static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>] {
        [.number("a") { $0.a }, .string("b") { $0.b }]
    }
}

/// `[.string("b"), .number("c")]`
public enum DeclarationBC: EvolvingDeclaration {
    public static let description = [(name: "b", isNumber: false), (name: "c", isNumber: true)]
    public static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>] {
        [.string("b") { $0.b }, .number("c") { $0.c }]
    }
}

/// `[.number("c"), .number("a"), .string("b")]`: a superset, reordered.
public enum DeclarationCAB: EvolvingDeclaration {
    public static let description = [
        (name: "c", isNumber: true), (name: "a", isNumber: true),
        (name: "b", isNumber: false),
    ]
    public static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>] {
        [.number("c") { $0.c }, .number("a") { $0.a }, .string("b") { $0.b }]
    }
}

/// `[.string("a")]`: index `a` changes kind (its decimal text).
public enum DeclarationTextA: EvolvingDeclaration {
    public static let description = [(name: "a", isNumber: false)]
    public static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>] {
        [.string("a") { $0.a.map(String.init) }]
    }
}

/// No indexes at all.
public enum DeclarationNone: EvolvingDeclaration {
    public static let description: [(name: String, isNumber: Bool)] = []
    public static func indexes<R: EvolvingFields>(_ record: R.Type) -> [StorageIndex<R>] { [] }
}

/// A plain reverse-DNS storage name.
public enum NamePlain: EvolvingName { public static let name = "com.example.Evolving" }
/// A name with a dot, a slash, a NUL and an emoji.
public enum NameOdd: EvolvingName { public static let name = "com.example.Evolving/b.c\u{0}🦊" }

/// Runs the commands of the schema-evolution test on a store: the same code in the test process and in
/// the `LocalStorageStress` helper process, so both sides of the test do exactly the same thing.
///
/// ```
/// save V N ID A B C        (A, B, C a value or "-" for nil)  → ok
/// delete V N ID                                              → ok
/// clear V N                                                  → ok
/// query V N INDEX OP VALUE                                   → ids ID,ID,… (ascending by INDEX, then id)
/// count V N INDEX OP VALUE                                   → count K
/// ```
/// `V` picks a declaration (0…4), `N` a name (0…1), `OP` is `eq`, `ge`, `lt` or `prefix`.
public enum EvolutionDriver {
    public static let declarations: [any EvolvingDeclaration.Type] = [
        DeclarationAB.self, DeclarationBC.self, DeclarationCAB.self, DeclarationTextA.self, DeclarationNone.self,
    ]
    public static let names: [any EvolvingName.Type] = [NamePlain.self, NameOdd.self]

    /// Runs one command line; returns the reply line (`error …` when the store threw).
    public static func perform(_ line: String, on storage: LocalStorage) async -> String {
        let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard words.count >= 3, let v = Int(words[1]), declarations.indices.contains(v), let n = Int(words[2]),
            names.indices.contains(n)
        else { return "error bad command \(line)" }
        do {
            return try await run(words, on: storage, name: names[n], declaration: declarations[v])
        } catch {
            return "error \(error)"
        }
    }

    private static func run<N: EvolvingName, D: EvolvingDeclaration>(
        _ words: [String], on storage: LocalStorage, name: N.Type, declaration: D.Type
    ) async throws -> String {
        typealias Record = Evolving<N, D>
        func optional(_ word: String) -> String? { word == "-" ? nil : word }
        switch words[0] {
        case "save" where words.count == 7:
            try await storage.save(
                Record(
                    id: words[3], a: optional(words[4]).flatMap { Int($0) },
                    b: optional(words[5]), c: optional(words[6]).flatMap { Int($0) }))
            return "ok"
        case "delete" where words.count == 4:
            try await storage.delete(Record.self, id: words[3])
            return "ok"
        case "clear" where words.count == 3:
            try await storage.deleteAll(Record.self)
            return "ok"
        case "query" where words.count == 7, "count" where words.count == 7:
            let filter = try self.filter(
                index: words[3], op: words[4], value: words[5],
                isNumber: words[6] == "number")
            if words[0] == "count" { return "count \(try await storage.count(Record.self, matching: [filter]))" }
            let rows = try await storage.fetch(Record.self, matching: [filter], orderedBy: .ascending(words[3]))
            return "ids " + rows.map(\.id).joined(separator: ",")
        default:
            return "error bad command \(words.joined(separator: " "))"
        }
    }

    private static func filter(
        index: String, op: String, value: String, isNumber: Bool
    ) throws
        -> StorageIndexFilter
    {
        if isNumber {
            guard let number = Int(value) else { throw DriverError(description: "not a number: \(value)") }
            switch op {
            case "eq": return .equals(index, number)
            case "ge": return .atLeast(index, number)
            case "lt": return .lessThan(index, number)
            default: throw DriverError(description: "no number operator \(op)")
            }
        }
        switch op {
        case "eq": return .equals(index, value)
        case "ge": return .atLeast(index, value)
        case "lt": return .lessThan(index, value)
        case "prefix": return .hasPrefix(index, value)
        default: throw DriverError(description: "no string operator \(op)")
        }
    }
}

struct DriverError: Error, CustomStringConvertible {
    let description: String
}
