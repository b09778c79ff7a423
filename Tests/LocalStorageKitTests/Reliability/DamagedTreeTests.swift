import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Damage the open's checks do not reach, met by the CLI's whole-database commands and by a repair (found by
/// new-user trials): a damaged leaf deep in a type's records tree ended `stats` and `export` with SIGSEGV inside
/// LMDB; a byte changed in a database name of the main database made `verify --repair` salvage none of the
/// records and call the store clean; a type whose description cannot be read was left out of `export` in silence
/// and lost by a repair that said it was "left untouched".
@Suite struct DamagedTreeTests {
    /// A closed store of 500 products (its records tree two levels deep) and the data file's path.
    private func makeStore() async throws -> (configuration: LocalStorageConfiguration, dataFile: URL, number: UInt32) {
        let configuration = diskConfiguration(temporaryDirectory())
        let number = try await withStore(configuration) { storage in
            try await storage.save(contentsOf: (0..<500).map(Product.sample))
            try await storage.save(Note(id: "n1", text: "one"))
            return try await storage.core.schema(for: Product.self).number
        }
        return (configuration, configuration.storeDirectory.appendingPathComponent("data.mdb"), number)
    }

    /// The page at `number` of `bytes` (the whole file), with its size.
    private func pageRange(_ number: UInt64, pageSize: Int) -> Range<Int> {
        Int(number) * pageSize..<(Int(number) + 1) * pageSize
    }

    /// The `index`th node's offset in a page that starts at `start`.
    private func nodeOffset(_ bytes: [UInt8], page start: Int, index: Int) -> Int {
        let at = start + DataFilePages.headerSize + 2 * index
        return start + Int(bytes[at]) | Int(bytes[at + 1]) << 8
    }

    /// The closed store of ``makeStore()``, its data file's bytes, and the first leaf of its records tree (two
    /// levels deep): the leaf's page and the offset of its first node.
    private func storeWithFirstLeaf() async throws -> (
        configuration: LocalStorageConfiguration, dataFile: URL, number: UInt32, bytes: [UInt8], leaf: UInt64,
        first: Int, pageSize: Int
    ) {
        let (configuration, dataFile, number) = try await makeStore()
        let (walk, meta) = try walkDataFile(dataFile.path)
        let records = try #require(walk.databases["r.\(number)"])
        try #require(records.depth == 2)
        let bytes = [UInt8](try Data(contentsOf: dataFile))
        let (leaf, first) = firstLeaf(of: records, in: bytes, pageSize: meta.pageSize)
        return (configuration, dataFile, number, bytes, leaf, first, meta.pageSize)
    }

    @Test func wholeDatabaseCommandsReportADamagedLeafInsteadOfCrashing() async throws {
        var (configuration, dataFile, number, bytes, leaf, first, _) = try await storeWithFirstLeaf()
        // The first leaf's first entry now says it holds sorted duplicates, which LMDB follows into a cursor
        // the records database does not have.
        bytes[first + 4] |= UInt8(DataFilePages.dupData)
        try Data(bytes).write(to: dataFile)

        let files = configuration.storeDirectory.path
        let commands = [
            ["stats"], ["export"], ["list", "Product"], ["get", "Product", "sku_1"], ["delete", "Product", "sku_1"],
            ["clear", "Product", "--yes"], ["compact"], ["compact", "--output", temporaryDirectory().path],
        ]
        for command in commands {
            let result = try await CLIResult.run(command + ["--store", files], environment: nil)
            #expect(result.status == 1, "\(command): \(result.status) \(result.stdout)\(result.stderr)")
            #expect(
                result.stderr.contains("damaged at page \(leaf) of database r.\(number)"),
                "\(command): \(result.stderr)")
        }
        // Another type's records are still listed and exported.
        let notes = try await CLIResult.run(["export", "Note", "--store", files], environment: nil)
        #expect(notes.status == 0, "\(notes.stderr)")
        #expect(notes.stdout.contains("\"n1\""))
        #expect(try await CLIResult.run(["list", "Note", "--store", files], environment: nil).status == 0)
    }

    /// Changes byte `index` of the database name `name` in the main database's only page of the newest commit
    /// in `dataFile` to `byte`; returns the file's bytes as written.
    private func changeDatabaseName(_ name: String, at index: Int, to byte: UInt8, in dataFile: URL) throws -> [UInt8] {
        let (_, meta) = try walkDataFile(dataFile.path)
        try #require(meta.main.depth == 1)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        let page = pageRange(meta.main.root, pageSize: meta.pageSize)
        let name = Array(name.utf8)
        let at = try #require(
            page.first { bytes[$0..<min(page.upperBound, $0 + name.count)].elementsEqual(name) })
        bytes[at + index] = byte
        try Data(bytes).write(to: dataFile)
        return bytes
    }

    /// Expects each of `commands` on the closed store of `configuration` to exit 1 naming `damage`, then
    /// `verify --repair` to succeed; returns the repaired store, open.
    private func expectRefusedThenRepaired(
        _ commands: [[String]], naming damage: String, _ configuration: LocalStorageConfiguration
    ) async throws -> LocalStorage {
        let files = configuration.storeDirectory.path
        for command in commands {
            let result = try await CLIResult.run(command + ["--store", files], environment: nil)
            #expect(result.status == 1, "\(command): \(result.status) \(result.stdout)\(result.stderr)")
            #expect((result.stdout + result.stderr).contains(damage), "\(command)")
        }
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        return try LocalStorage(configuration: configuration)
    }

    /// The records tree's first leaf (the root's second child) and the offset of that leaf's first node.
    private func firstLeaf(of records: DatabaseRecord, in bytes: [UInt8], pageSize: Int) -> (page: UInt64, node: Int) {
        let root = pageRange(records.root, pageSize: pageSize)
        let node = nodeOffset(bytes, page: root.lowerBound, index: 1)
        let leaf = UInt64(bytes[node]) | UInt64(bytes[node + 1]) << 8 | UInt64(bytes[node + 2]) << 16
        return (leaf, nodeOffset(bytes, page: pageRange(leaf, pageSize: pageSize).lowerBound, index: 0))
    }

    /// A `write { }` body that catches an error of a damaged page and returns fails alone, and the writes that
    /// share its commit are kept. LMDB marks a transaction that met the damage failed, and its failed commit ends
    /// it: the writer committed such a body, aborted it a second time (a double free) and lost its peers with it.
    @Test func aBodyThatSwallowsADamagedPageFailsAloneAndItsPeersCommit() async throws {
        var (configuration, dataFile, _, bytes, leaf, first, pageSize) = try await storeWithFirstLeaf()
        let keySize = Int(bytes[first + 6]) | Int(bytes[first + 7]) << 8
        let id = String(decoding: bytes[(first + 8)..<(first + 8 + keySize)], as: UTF8.self)
        let flags = pageRange(leaf, pageSize: pageSize).lowerBound + 10
        bytes[flags] = 0  // neither a leaf nor a branch: LMDB's search fails with MDB_CORRUPTED
        bytes[flags + 1] = 0
        try Data(bytes).write(to: dataFile)

        try await withStore(configuration) { storage async throws in
            let hold = try await WriterHold(storage)
            let before = Task { try await storage.write { tx in try tx.save(Note(id: "before", text: "kept")) } }
            try await waitUntil("the first write is queued") { storage.core.writer.queuedCount == 1 }
            let swallowing = Task {
                try await storage.write { tx -> Bool in
                    try tx.save(Note(id: "swallowing", text: "lost"))
                    return (try? tx.fetch(Product.self, id: id)) != nil
                }
            }
            try await waitUntil("the swallowing write is queued") { storage.core.writer.queuedCount == 2 }
            let after = Task { try await storage.write { tx in try tx.save(Note(id: "after", text: "kept")) } }
            try await waitUntil("the last write is queued") { storage.core.writer.queuedCount == 3 }
            try await hold.release()
            await #expect(throws: LocalStorageError.self) { try await swallowing.value }
            try await before.value
            try await after.value
            #expect(try await storage.fetch(Note.self, id: "before")?.text == "kept")
            #expect(try await storage.fetch(Note.self, id: "after")?.text == "kept")
            #expect(try await storage.fetch(Note.self, id: "swallowing") == nil)
            #expect(try await storage.fetch(Note.self, id: "n1")?.text == "one")
        }
    }

    /// A node whose value size grew by one bit runs into its neighbour inside the page: LMDB reads (and a repair
    /// in place wrote) the neighbour's bytes. `verify` called such a file sound.
    @Test func aNodeThatRunsIntoTheNextOneIsDamage() async throws {
        var (configuration, dataFile, number, bytes, leaf, _, pageSize) = try await storeWithFirstLeaf()
        // The node lowest in the page has another node right after it: 8 bytes more of value run into that
        // one, still inside the page (which the walk already checked).
        let start = pageRange(leaf, pageSize: pageSize).lowerBound
        let count = (Int(bytes[start + 12]) | Int(bytes[start + 13]) << 8 - DataFilePages.headerSize) / 2
        let node = try #require((0..<count).map { nodeOffset(bytes, page: start, index: $0) }.min())
        let size = Int(bytes[node]) | Int(bytes[node + 1]) << 8
        bytes[node] = UInt8(truncatingIfNeeded: size + 8)
        bytes[node + 1] = UInt8(truncatingIfNeeded: (size + 8) >> 8)
        try Data(bytes).write(to: dataFile)
        let files = configuration.storeDirectory.path
        let verify = try await CLIResult.run(["verify", "--store", files], environment: nil)
        #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("page \(leaf) of database r.\(number) (Product/records)"), "\(verify.stdout)")
        #expect(verify.stdout.contains("no record was read"), "\(verify.stdout)")
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        let storage = try LocalStorage(configuration: configuration)
        var present = 0
        for n in 0..<500 {
            guard let found = try await storage.fetch(Product.self, id: "sku_\(n)") else { continue }
            #expect(found == Product.sample(n))
            present += 1
        }
        #expect(present >= 490)
    }

    /// A changed byte made one type's records database carry another type's name: the salvage read on past
    /// the disorder, collected both trees under one name, and imported products as notes.
    @Test func aSalvageNeverPutsOneTypesRecordsUnderAnother() async throws {
        let configuration = diskConfiguration(temporaryDirectory())
        let (products, notes) = try await withStore(configuration) { storage in
            try await storage.save(contentsOf: (0..<300).map(Product.sample))
            try await storage.save(Note(id: "n1", text: "one"))
            try await storage.save(Note(id: "n2", text: "two"))  // The newest commit.
            return (
                try await storage.core.schema(for: Product.self).number,
                try await storage.core.schema(for: Note.self).number
            )
        }
        try #require(products < 10 && notes < 10)
        let dataFile = configuration.storeDirectory.appendingPathComponent("data.mdb")
        _ = try changeDatabaseName("r.\(products)", at: 2, to: UInt8(ascii: "0") + UInt8(notes), in: dataFile)

        let repair = try await CLIResult.run(
            ["verify", "--repair", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stdout.contains("the newest commit"), "\(repair.stdout)")
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.count(Note.self) <= 2)
        for note in try await storage.fetch(Note.self) { #expect(["n1", "n2"].contains(note.id)) }
        for n in 0..<300 { #expect(try await storage.fetch(Product.self, id: "sku_\(n)") == Product.sample(n)) }
    }

    /// A duplicate in a sub-page whose flags say it is more than a key: LMDB followed it into a sub-database
    /// that does not exist (SIGSEGV in a listing by that value, in `verify`'s child and in the app).
    @Test func aDuplicateWithFlagsInASubPageIsDamage() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        let (walk, meta) = try walkDataFile(dataFile.path)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        // The first sub-page (a value with a few ids, inside its leaf node) of any of the type's indexes.
        var found: (page: UInt64, flags: Int)?
        for (name, record) in walk.databases where name.hasPrefix("i.\(number).") && record.depth >= 1 {
            // Down the first children to the first leaf.
            var start = pageRange(record.root, pageSize: meta.pageSize).lowerBound
            for _ in 1..<Int(record.depth) {
                let node = nodeOffset(bytes, page: start, index: 0)
                let child = Int(bytes[node]) | Int(bytes[node + 1]) << 8 | Int(bytes[node + 2]) << 16
                start = pageRange(UInt64(child), pageSize: meta.pageSize).lowerBound
            }
            let count = (Int(bytes[start + 12]) | Int(bytes[start + 13]) << 8 - DataFilePages.headerSize) / 2
            for index in 0..<count {
                let node = nodeOffset(bytes, page: start, index: index)
                let flags = UInt16(bytes[node + 4]) | UInt16(bytes[node + 5]) << 8
                guard flags & DataFilePages.dupData != 0, flags & DataFilePages.subData == 0 else { continue }
                let subpage = node + DataFilePages.nodeSize + (Int(bytes[node + 6]) | Int(bytes[node + 7]) << 8)
                let first = subpage + (Int(bytes[subpage + 16]) | Int(bytes[subpage + 17]) << 8)
                found = (UInt64(start / meta.pageSize), first + 4)
                break
            }
            if found != nil { break }
        }
        let (page, flags) = try #require(found, "no index of the store has a sub-page")
        bytes[flags] |= UInt8(DataFilePages.dupData)
        try Data(bytes).write(to: dataFile)
        let storage = try await expectRefusedThenRepaired(
            [["verify"], ["list", "Product", "--where", "rating=0.5"], ["delete", "Product", "sku_5"]],
            naming: "damaged at page \(page)", configuration)
        #expect(try await storage.count(Product.self) == 500)
    }

    /// The salvage read the older commit whenever it yielded more records, so a record the newest commit
    /// deleted came back when a page both commits share was damaged.
    @Test func aSalvageDoesNotBringBackWhatTheNewestCommitDeleted() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        try await withStore(configuration) { storage in try await storage.delete(Product.self, id: "sku_6") }
        let (walk, meta) = try walkDataFile(dataFile.path)
        let records = try #require(walk.databases["r.\(number)"])
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        // The root's last child: the delete of sku_6 (on the first leaves) copied neither it nor its pages.
        let root = pageRange(records.root, pageSize: meta.pageSize).lowerBound
        let count = (Int(bytes[root + 12]) | Int(bytes[root + 13]) << 8 - DataFilePages.headerSize) / 2
        let node = nodeOffset(bytes, page: root, index: count - 1)
        let leaf = Int(bytes[node]) | Int(bytes[node + 1]) << 8 | Int(bytes[node + 2]) << 16
        let range = pageRange(UInt64(leaf), pageSize: meta.pageSize)
        bytes.replaceSubrange(range, with: [UInt8](repeating: 0, count: range.count))
        try Data(bytes).write(to: dataFile)
        let repair = try await CLIResult.run(
            ["verify", "--repair", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(!repair.stdout.contains("the newest commit"), "\(repair.stdout)")
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.fetch(Product.self, id: "sku_6") == nil)
        #expect(try await storage.fetch(Note.self, id: "n1") != nil)
    }

    /// A changed byte made the older meta page name the newest transaction: `verify` called the file sound and
    /// `compact` copied whichever commit LMDB picked.
    @Test func twoMetaPagesNamingOneTransactionAreDamage() async throws {
        let (configuration, dataFile, _) = try await makeStore()
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        let (_, meta) = try walkDataFile(dataFile.path)
        let older = (1 - meta.number) * meta.pageSize + 144
        let newest = meta.transactionID
        for index in 0..<8 { bytes[older + index] = UInt8(truncatingIfNeeded: newest >> (8 * UInt64(index))) }
        try Data(bytes).write(to: dataFile)
        let storage = try await expectRefusedThenRepaired(
            [["verify"], ["compact"]], naming: "both meta pages name transaction", configuration)
        #expect(try await storage.count(Product.self) == 500)
        #expect(try await storage.fetch(Note.self, id: "n1") != nil)  // The newest commit's record.
    }

    /// A page whose flags say "dirty" (LMDB's in-memory mark, cleared before a page is written) made a delete
    /// change it in place, inside the read-only map: SIGSEGV. The walk checked the kind bits only.
    @Test func aPageMarkedDirtyOnDiskIsDamage() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        let (walk, meta) = try walkDataFile(dataFile.path)
        let records = try #require(walk.databases["r.\(number)"])
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        let (leaf, _) = firstLeaf(of: records, in: bytes, pageSize: meta.pageSize)
        bytes[pageRange(leaf, pageSize: meta.pageSize).lowerBound + 10] |= 0x10  // P_DIRTY
        try Data(bytes).write(to: dataFile)
        let storage = try await expectRefusedThenRepaired(
            [["verify"], ["delete", "Product", "sku_1"], ["delete", "Product", "sku_499"]],
            naming: "damaged at page \(leaf)", configuration)
        #expect(try await storage.count(Product.self) == 500)
    }

    /// A value size in the store's `meta` with one bit changed (about 64 KiB more): every open read the value
    /// through LMDB past the end of the file and ended with SIGBUS. The open now walks `meta` whole.
    @Test func aValueSizeChangedInMetaIsRefusedAtOpen() async throws {
        let (configuration, dataFile, _) = try await makeStore()
        let (walk, meta) = try walkDataFile(dataFile.path)
        let record = try #require(walk.databases["meta"])
        try #require(record.depth == 1)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        let node = nodeOffset(bytes, page: pageRange(record.root, pageSize: meta.pageSize).lowerBound, index: 0)
        bytes[node + 2] ^= 0x01  // The size's third byte.
        try Data(bytes).write(to: dataFile)
        let storage = try await expectRefusedThenRepaired(
            [["types"], ["stats"], ["verify"]], naming: "damaged at page \(record.root) of database meta",
            configuration)
        #expect(try await storage.count(Product.self) == 500)
    }

    /// A reader that closes the pipe ends `verify`'s child with SIGPIPE, which was reported as damage.
    @Test func verifyIntoAClosedPipeReportsNoDamage() async throws {
        let (configuration, _, _) = try await makeStore()
        let result = try await CLIResult.run(
            [configuration.storeDirectory.path], environment: nil,
            launcher: ["/bin/sh", "-c", #"sleep 0.2 | ("$1" verify --store "$2"; echo "status $?" >&2) | true"#, "sh"])
        #expect(!result.stderr.contains("damaged"), "\(result.stderr)")
    }

    @Test func aRepairReadsPastAMainDatabaseKeyOutOfOrder() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        // `e.N` becomes `z.N`, after names that sort later, so the page's keys are out of order and the open
        // refuses the store.
        let bytes = try changeDatabaseName("e.\(number)", at: 0, to: UInt8(ascii: "z"), in: dataFile)
        expectOpenFailed(configuration.databaseDirectory, mentioning: ["out of order"])

        let files = configuration.storeDirectory.path
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stdout.contains("Salvaged 501 of the 501 records the damaged file counts"), "\(repair.stdout)")
        // The damaged file is kept beside the fresh one, byte for byte.
        let kept = dataFile.path + ".damaged"
        #expect(repair.stdout.contains(kept), "\(repair.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == Data(bytes))

        let storage = try LocalStorage(configuration: configuration)
        for n in 0..<500 { #expect(try await storage.fetch(Product.self, id: "sku_\(n)") == Product.sample(n)) }
        #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
    }

    @Test func aTypeWhoseDescriptionCannotBeReadIsReportedByExportAndCountedLostByARepair() async throws {
        let (configuration, dataFile, _) = try await makeStore()
        try await withStore(configuration) { storage in
            // Twice: a salvage reads the snapshot of either meta page, and the older one would still hold it.
            for damage in ["{damaged", "{damaged again"] {
                try storage.core.environment.write { txn in
                    try txn.put(storage.core.meta, key: TypeInfo.key("Product"), value: Array(damage.utf8))
                }
            }
        }
        let files = configuration.storeDirectory.path
        for arguments in [["export"], ["export", "Product", "Note"]] {
            let export = try await CLIResult.run(arguments + ["--store", files], environment: nil)
            #expect(export.status == 1, "\(arguments): \(export.stderr)")
            #expect(
                export.stderr.contains("skipped Product: its description in meta cannot be read"), "\(export.stderr)")
            #expect(export.stderr.contains("1 type whose description cannot be read"), "\(export.stderr)")
            #expect(export.stdout.contains("\"n1\""), "\(arguments)")
        }
        let list = try await CLIResult.run(["list", "Product", "--store", files], environment: nil)
        #expect(list.status == 1)
        #expect(list.stderr.contains("description of type \"Product\" cannot be read"), "\(list.stderr)")
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.stdout.contains("lost Product: its description in meta cannot be read"), "\(repair.stdout)")
        #expect(!repair.stdout.contains("left untouched"), "\(repair.stdout)")
        #expect(repair.stdout.contains("Salvaged 1 of the 501 records the damaged file counts"), "\(repair.stdout)")
        #expect(repair.stdout.contains("500 are lost"), "\(repair.stdout)")
        #expect(FileManager.default.fileExists(atPath: dataFile.path + ".damaged"))
    }

    /// The page a branch node of `bytes` at `node` references.
    private func child(_ bytes: [UInt8], node: Int) -> UInt64 {
        UInt64(bytes[node]) | UInt64(bytes[node + 1]) << 8 | UInt64(bytes[node + 2]) << 16
            | UInt64(bytes[node + 4]) << 32 | UInt64(bytes[node + 5]) << 40
    }

    /// A damaged branch reference of one database led to a leaf of another's, which the walk reached first: it
    /// claimed the leaf for the wrong tree, so the right one met it as "referenced twice", and a repair lost the
    /// records on it. Each page's keys must now lie in the range its parent gives it: such a page is damage
    /// where the reference is, and a salvage reads it for its own tree.
    @Test func aReferenceToAnotherTreesPageLosesNothingOfThatTree() async throws {
        let configuration = diskConfiguration(temporaryDirectory())
        let number = try await withStore(configuration) { storage in
            // Enough categories of long names that the category index's tree has a root of three or more leaves.
            try await storage.save(
                contentsOf: (0..<500).map { n in
                    var product = Product.sample(n)
                    product.category = "category \(n % 97) " + String(repeating: "x", count: 40)
                    return product
                })
            return try await storage.core.schema(for: Product.self).number
        }
        let dataFile = configuration.storeDirectory.appendingPathComponent("data.mdb")
        let (walk, meta) = try walkDataFile(dataFile.path)
        try #require(walk.problems.isEmpty, "\(walk.problems)")
        let victim = "r.\(number)"
        let records = try #require(walk.databases[victim])
        try #require(records.depth == 2)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        // A database the walk reaches before the records (the main database keeps names in byte order) whose
        // root is a branch of three or more children: its second child gets both bounds.
        let pageSize = meta.pageSize
        func children(_ record: DatabaseRecord) -> Int {
            let start = pageRange(record.root, pageSize: pageSize).lowerBound
            return (Int(bytes[start + 12]) | Int(bytes[start + 13]) << 8 - DataFilePages.headerSize) / 2
        }
        let culprit = try #require(
            walk.databases.filter { name, record in
                name.utf8.lexicographicallyPrecedes(victim.utf8) && record.depth == 2 && children(record) >= 3
            }.keys.sorted().first, "\(walk.databases.mapValues { ($0.depth, $0.entries) })")
        let culpritRoot = pageRange(try #require(walk.databases[culprit]).root, pageSize: pageSize).lowerBound
        let damaged = nodeOffset(bytes, page: culpritRoot, index: 1)
        let stolen = child(
            bytes, node: nodeOffset(bytes, page: pageRange(records.root, pageSize: pageSize).lowerBound, index: 0))
        let stolenFrom = child(bytes, node: damaged)
        bytes[damaged] = UInt8(truncatingIfNeeded: stolen)
        bytes[damaged + 1] = UInt8(truncatingIfNeeded: stolen >> 8)
        bytes[damaged + 2] = UInt8(truncatingIfNeeded: stolen >> 16)
        try Data(bytes).write(to: dataFile)

        let files = configuration.storeDirectory.path
        let verify = try await CLIResult.run(["verify", "--store", files], environment: nil)
        #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
        #expect(
            verify.stdout.contains("page \(stolen) of database \(culprit): its keys lie outside the range"),
            "\(verify.stdout)")
        #expect(!verify.stdout.contains("of database \(victim)"), "\(verify.stdout)")
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        let storage = try LocalStorage(configuration: configuration)
        for n in 0..<500 {
            #expect(try await storage.fetch(Product.self, id: "sku_\(n)")?.title == "Product \(n)", "sku_\(n)")
        }
        #expect(stolen != stolenFrom)
    }

    /// LMDB moves the separators of its branch pages as it splits, merges and rebalances them: a sound store
    /// after random saves, updates that move index values, and deletes must walk without a problem (the walk
    /// checks that each page's keys lie in the range its parent gives it).
    @Test func aSoundStoreWalksCleanAfterSplitsMergesAndRebalances() async throws {
        let configuration = diskConfiguration(temporaryDirectory())
        var random = RandomDamageTests.SplitMix(state: 23)
        var rounds: [(saves: [Product], deletes: [String])] = []
        for _ in 0..<8 {
            let saves = (0..<800).map { _ in
                var product = Product.sample(Int.random(in: 0..<3_000, using: &random))
                product.price = Double(Int.random(in: 0..<100_000, using: &random)) / 7
                product.category = "c\(Int.random(in: 0..<40, using: &random))"
                return product
            }
            rounds.append((saves, (0..<900).map { _ in "sku_\(Int.random(in: 0..<3_000, using: &random))" }))
        }
        let snapshot = rounds
        try await withStore(configuration) { storage in
            for (saves, deletes) in snapshot {
                try await storage.save(contentsOf: saves)
                try await storage.write { tx in for id in deletes { try tx.delete(Product.self, id: id) } }
            }
            #expect(try await storage.count(Product.self) > 0)
        }
        let (walk, _) = try walkDataFile(configuration.storeDirectory.appendingPathComponent("data.mdb").path)
        #expect(walk.problems.isEmpty, "\(walk.problems.prefix(5))")
        #expect(walk.databases.values.contains { $0.depth >= 2 })
    }
}
