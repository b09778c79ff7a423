import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// Index declarations that change while records of the type are stored, in one process and across two:
/// every query stays exact, nothing crashes, and `verify` finds nothing.
@Suite struct SchemaEvolutionTests {
    typealias AB = Evolving<NamePlain, DeclarationAB>
    typealias BC = Evolving<NamePlain, DeclarationBC>
    typealias OddAB = Evolving<NameOdd, DeclarationAB>

    /// The reference model: the records of each name, and the expected result of a driver query.
    struct Model {
        var records: [Int: [String: (a: Int?, b: String?, c: Int?)]] = [0: [:], 1: [:]]

        mutating func apply(_ command: String) {
            let words = command.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard let n = Int(words[2]) else { return }
            func optional(_ word: String) -> String? { word == "-" ? nil : word }
            switch words[0] {
            case "save":
                records[n, default: [:]][words[3]] = (
                    optional(words[4]).flatMap { Int($0) },
                    optional(words[5]),
                    optional(words[6]).flatMap { Int($0) }
                )
            case "delete": records[n]?[words[3]] = nil
            case "clear": records[n] = [:]
            default: break
            }
        }

        /// The reply the driver must give to a query or count command.
        func expected(_ command: String) -> String {
            let words = command.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let (n, index, op, value, isNumber) = (
                Int(words[2]) ?? 0, words[3], words[4], words[5],
                words[6] == "number"
            )
            var rows: [(id: String, key: [UInt8], number: Int)] = []
            for (id, record) in records[n] ?? [:] {
                if isNumber {
                    let field = index == "a" ? record.a : record.c
                    guard let field, let bound = Int(value) else { continue }
                    let matches = op == "eq" ? field == bound : op == "ge" ? field >= bound : field < bound
                    if matches { rows.append((id, [], field)) }
                } else {
                    let text = index == "b" ? record.b : record.a.map(String.init)
                    guard let text else { continue }
                    let (bytes, bound) = (Array(text.utf8), Array(value.utf8))
                    let matches: Bool =
                        switch op {
                        case "eq": bytes == bound
                        case "ge": !bytes.lexicographicallyPrecedes(bound)
                        case "lt": bytes.lexicographicallyPrecedes(bound)
                        default: bytes.starts(with: bound)
                        }
                    if matches { rows.append((id, bytes, 0)) }
                }
            }
            rows.sort { left, right in
                if isNumber, left.number != right.number { return left.number < right.number }
                if !isNumber, left.key != right.key { return left.key.lexicographicallyPrecedes(right.key) }
                return Array(left.id.utf8).lexicographicallyPrecedes(Array(right.id.utf8))
            }
            if words[0] == "count" { return "count \(rows.count)" }
            return "ids " + rows.map(\.id).joined(separator: ",")
        }
    }

    /// Runs a command in this process and applies it to the model.
    private func run(_ command: String, on storage: LocalStorage, model: inout Model) async -> String {
        let reply = await EvolutionDriver.perform(command, on: storage)
        model.apply(command)
        return reply
    }

    /// An expired record the new declaration cannot decode is purged by the re-index, not decoded: it made every
    /// indexed read of the type throw until the sweep purged it, though no read sees an expired record.
    @Test func anExpiredRecordTheNewDeclarationCannotDecodeIsPurgedByTheReindex() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        let clock = VirtualClock()
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(ShelvedWithoutOwner(id: "old", category: "books"), expiration: .seconds(10))
        clock.advance(by: .seconds(11))
        var changes = storage.changes(of: ShelvedWithOwner.self).makeAsyncIterator()
        #expect(try await storage.fetch(ShelvedWithOwner.self, matching: [.equals("owner", "bob")]).isEmpty)
        #expect(try await storage.count(ShelvedWithOwner.self, matching: [.equals("category", "books")]) == 0)
        #expect(await changes.next() == .expired(id: "old"))
        try await storage.save(ShelvedWithOwner(id: "new", category: "books", owner: "bob"))
        #expect(
            try await storage.fetch(ShelvedWithOwner.self, matching: [.equals("owner", "bob")]).map(\.id) == ["new"])
    }

    /// A `read { }` whose body first reads types this process has not registered yet still re-indexes a type
    /// whose declaration changed before it queries it: the registrations used up the read's rounds, and the query
    /// ran on an index that lacked every record saved under the old declaration.
    @Test func aReadThatRegistersTypesFirstStillReindexes() async throws {
        let directory = temporaryDirectory()
        let items = (0..<6).map { Shelved(id: "s\($0)", category: $0 % 2 == 0 ? "books" : "toys") }
        try await withStore(diskConfiguration(directory)) { try await $0.save(contentsOf: items) }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let (note, products, books) = try await storage.read { tx in
                (
                    try tx.fetch(Note.self, id: "absent"), try tx.count(Product.self),
                    try tx.fetch(IndexedShelved.self, matching: [.equals("category", "books")])
                )
            }
            #expect(note == nil && products == 0)
            #expect(Set(books.map(\.id)) == ["s0", "s2", "s4"])
        }
    }

    @Test(arguments: [false, true])
    func twoDeclarationsOfOneTypeStayExactInOneProcess(bcFirst: Bool) async throws {
        let directory = temporaryDirectory()
        var model = Model()
        let (first, second) = bcFirst ? (1, 0) : (0, 1)
        try await withStore(diskConfiguration(directory)) { storage async throws in
            for n in 0..<6 {
                let b = n % 3 == 0 ? "-" : "x\(n % 2)"
                let version = n % 2 == 0 ? first : second
                #expect(await run("save \(version) 0 r\(n) \(n) \(b) \(10 - n)", on: storage, model: &model) == "ok")
            }
            // Queries through each declaration in turn, with saves in between: each re-indexes what the other
            // wrote, and neither ever sees a handle the other invalidated.
            let queries = [
                "query 1 0 b eq x1 string", "query 0 0 a ge 2 number", "count 1 0 c lt 8 number",
                "query 0 0 b prefix x string", "count 0 0 a lt 4 number",
            ]
            for (step, query) in queries.enumerated() {
                #expect(await run(query, on: storage, model: &model) == model.expected(query), "\(query)")
                let version = step % 2
                let saved = "save \(version) 0 s\(step) \(step + 20) x\(step % 2) \(step)"
                #expect(await run(saved, on: storage, model: &model) == "ok")
            }
            // A type registered afterwards gets index databases of its own: the first type's saves never
            // reach them.
            #expect(await run("save 0 1 new1 1 x1 1", on: storage, model: &model) == "ok")
            #expect(await run("save 0 0 after 7 x1 7", on: storage, model: &model) == "ok")
            #expect(await run("save 1 0 after2 8 x0 8", on: storage, model: &model) == "ok")
            for query in [
                "count 0 1 a ge 0 number", "count 0 1 b prefix  string", "query 0 0 a ge 0 number",
                "query 1 0 c ge 0 number", "query 0 1 b eq x1 string",
            ] {
                #expect(await run(query, on: storage, model: &model) == model.expected(query), "\(query)")
            }
            #expect(try await verifyProblems(storage) == [])
        }
        // After reopening: the same answers, and a clean store.
        try await withStore(diskConfiguration(directory)) { storage async throws in
            for query in ["count 0 1 a ge 0 number", "query 1 0 b prefix x string", "query 0 0 a lt 100 number"] {
                #expect(await run(query, on: storage, model: &model) == model.expected(query), "\(query)")
            }
            #expect(try await verifyProblems(storage) == [])
        }
    }

    @Test func twoDeclarationsOfOneTypeStayExactAcrossTwoProcesses() async throws {
        let directory = temporaryDirectory()
        var model = Model()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let child = try HelperProcess(["evolve", directory.path], withInput: true)
            try await child.waitForLine("ready") { $0 == "ready" }
            func remote(_ command: String) async throws -> String {
                let reply = try await child.ask(command)
                model.apply(command)
                return reply
            }
            for n in 0..<8 { #expect(try await remote("save 0 0 c\(n) \(n) x\(n % 2) \(n)") == "ok") }
            // The issue's sequence: a query through the second declaration here, then the first there.
            for query in ["query 1 0 b eq x1 string", "count 1 0 c ge 3 number"] {
                #expect(await run(query, on: storage, model: &model) == model.expected(query), "\(query)")
            }
            for query in ["query 0 0 a ge 0 number", "count 0 0 b prefix x string"] {
                #expect(try await remote(query) == model.expected(query), "\(query)")
            }
            #expect(try await remote("save 0 0 c9 9 x1 9") == "ok")
            #expect(await run("save 0 1 other 1 x1 1", on: storage, model: &model) == "ok")
            #expect(try await remote("save 0 0 c10 10 x0 10") == "ok")
            for query in ["count 0 1 a ge 0 number", "query 1 0 c ge 0 number", "query 0 0 a ge 0 number"] {
                #expect(await run(query, on: storage, model: &model) == model.expected(query), "\(query)")
                #expect(try await remote(query) == model.expected(query), "\(query)")
            }
            child.closeInput()
            #expect(await child.waitForExit() == 0)
            #expect(try await verifyProblems(storage) == [])
        }
        let cli = try await verifyWithTheCLI(directory)
        #expect(cli.status == 0, "\(cli.output)")
    }

    /// Random declarations changing between two processes on two names (one full of dots, a slash, a NUL
    /// and an emoji), against the reference model: every query and count is exact.
    @Test func randomSchemaEvolutionAcrossTwoProcessesMatchesTheModel() async throws {
        let directory = temporaryDirectory()
        var model = Model()
        var random = SplitMix64(seed: 0x5C4E_3A11)
        let declarations = EvolutionDriver.declarations
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let child = try HelperProcess(["evolve", directory.path], withInput: true)
            try await child.waitForLine("ready") { $0 == "ready" }
            var queries = 0
            for _ in 0..<500 {
                let v = Int.random(in: 0..<declarations.count, using: &random)
                let n = Int.random(in: 0..<2, using: &random)
                let command: String
                let roll = Int.random(in: 0..<100, using: &random)
                let described = declarations[v].description
                if roll < 50 || described.isEmpty {
                    func value(_ range: Range<Int>) -> String {
                        Int.random(in: 0..<5, using: &random) == 0 ? "-" : "\(Int.random(in: range, using: &random))"
                    }
                    let b =
                        Int.random(in: 0..<5, using: &random) == 0
                        ? "-" : ["x", "xy", "y", "é", "x\u{1F98A}"].randomElement(using: &random) ?? "x"
                    command =
                        "save \(v) \(n) id\(Int.random(in: 0..<40, using: &random)) \(value(0..<15)) \(b) "
                        + value(-5..<5)
                } else if roll < 60 {
                    command = "delete \(v) \(n) id\(Int.random(in: 0..<40, using: &random))"
                } else if roll < 61 {
                    command = "clear \(v) \(n)"
                } else {
                    let index = described[Int.random(in: 0..<described.count, using: &random)]
                    let verb = roll < 80 ? "query" : "count"
                    if index.isNumber {
                        let op = ["eq", "ge", "lt"].randomElement(using: &random) ?? "eq"
                        command =
                            "\(verb) \(v) \(n) \(index.name) \(op) \(Int.random(in: -5..<15, using: &random)) number"
                    } else {
                        let op = ["eq", "ge", "lt", "prefix"].randomElement(using: &random) ?? "eq"
                        let bound = ["", "x", "xy", "1", "10", "9", "é"].randomElement(using: &random) ?? ""
                        command = "\(verb) \(v) \(n) \(index.name) \(op) \(bound) string"
                    }
                    queries += 1
                }
                let isRemote = Bool.random(using: &random)
                let expected = command.hasPrefix("query") || command.hasPrefix("count") ? model.expected(command) : "ok"
                let reply =
                    isRemote ? try await child.ask(command) : await EvolutionDriver.perform(command, on: storage)
                model.apply(command)
                #expect(reply == expected, "\(isRemote ? "child" : "parent"): \(command)")
                if reply != expected { break }
            }
            #expect(queries > 100)
            child.closeInput()
            #expect(await child.waitForExit() == 0)
            #expect(try await verifyProblems(storage) == [])
        }
        let cli = try await verifyWithTheCLI(directory)
        #expect(cli.status == 0, "\(cli.output)")
    }
}

/// A type stored without an owner.
struct ShelvedWithoutOwner: LocalStorageIndexed {
    let id: String
    var category: String
    static var storageName: String { "ShelvedOwned" }
    static var storageIndexes: [StorageIndex<ShelvedWithoutOwner>] { [StorageIndex("category", \.category)] }
}

/// The same stored type in a later release: an owner it cannot do without, and an index on it.
struct ShelvedWithOwner: LocalStorageIndexed, Equatable {
    let id: String
    var category: String
    var owner: String
    static var storageName: String { "ShelvedOwned" }
    static var storageIndexes: [StorageIndex<ShelvedWithOwner>] {
        [StorageIndex("category", \.category), StorageIndex("owner", \.owner)]
    }
}
