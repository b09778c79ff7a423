import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// `MetaIntegers` (Cache/MetaIntegers.swift), the adaptive policy's integers in `meta` for one write
/// transaction, against a dictionary on random operations: a short list and, past
/// ``MetaIntegers/listed`` keys, an index of fingerprints; counts that come back to their value within a
/// transaction are not written again, and what a flush leaves is what the next transaction reads.
@Suite struct MetaIntegersTests {
    /// Random sets, adjustments, ticks and reads over `keyCount` keys in several transactions, each flushed;
    /// every read matches the model, and a fresh `MetaIntegers` reads back the model after each one.
    @Test(arguments: [(UInt64(1), 6), (2, 40), (3, 300)])
    func matchesADictionaryOnRandomOperations(seed: UInt64, keyCount: Int) async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let meta = storage.core.meta
        let keys = (0..<keyCount).map { MetaIntegers.Key("test.integer.\($0)") }
        var model: [Int: UInt64] = [:]
        var random = SplitMix64(seed: seed)
        for _ in 0..<6 {
            // (operation, key, argument), made here: the writer's thread runs them against the model it is given.
            let operations = (0..<400).map { _ in (random.below(5), random.below(keyCount), random.below(1_000)) }
            let (after, mismatches) = try await storage.core.writer.perform { [model] context in
                var model = model
                var mismatches: [String] = []
                let integers = MetaIntegers(txn: context.txn, meta: meta)
                for (operation, index, argument) in operations {
                    let key = keys[index]
                    switch operation {
                    case 0:
                        integers.set(key, to: UInt64(argument))
                        model[index] = UInt64(argument)
                    case 1:
                        let delta = argument % 7 - 3
                        try integers.adjust(key, by: delta)
                        if delta != 0 { model[index] = UInt64(max(0, Int(model[index] ?? 0) + delta)) }
                    case 2:
                        let ticked = try integers.tick(key)
                        model[index] = (model[index] ?? 0) + 1
                        if ticked != model[index] { mismatches.append("tick \(index): \(ticked)") }
                    case 3:
                        let stored = try integers.stored(key)
                        if stored != model[index] {
                            mismatches.append("stored \(index): \(String(describing: stored))")
                        }
                    default:
                        let count = try integers.count(key)
                        if count != Int(model[index] ?? 0) { mismatches.append("count \(index): \(count)") }
                    }
                }
                try integers.flush()
                return (model, mismatches)
            }
            #expect(mismatches.isEmpty)
            model = after
            let readBack = try await storage.core.writer.perform { context in
                let integers = MetaIntegers(txn: context.txn, meta: meta)
                return try keys.map { try integers.stored($0) }
            }
            #expect(readBack == (0..<keyCount).map { model[$0] })
        }
    }

    /// A count moved up and back down within a transaction is left as `meta` holds it (here, bytes that are
    /// not an integer, which a write would have replaced); one that ends elsewhere is written.
    @Test func aCountThatComesBackIsNotWritten() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let meta = storage.core.meta
        let (unchanged, changed) = (MetaIntegers.Key("test.unchanged"), MetaIntegers.Key("test.changed"))
        var seven: [UInt8] = []
        seven.appendBigEndian(UInt64(7))
        try await storage.core.writer.perform { context in
            try context.txn.put(meta, key: unchanged.bytes, value: seven)
            try context.txn.put(meta, key: changed.bytes, value: seven)
        }
        try await storage.core.writer.perform { context in
            let integers = MetaIntegers(txn: context.txn, meta: meta)
            try integers.adjust(unchanged, by: 1)
            try integers.adjust(unchanged, by: -1)
            try integers.adjust(changed, by: 2)
            // Behind the integers' back, so that a write of `unchanged` would show.
            try context.txn.put(meta, key: unchanged.bytes, value: [1, 2, 3])
            try integers.flush()
        }
        let stored = try await storage.core.writer.perform { context in
            try [unchanged, changed].map { key in try context.txn.get(meta, key: key.bytes).map(Array.init) }
        }
        #expect(stored[0] == [1, 2, 3])
        var nine: [UInt8] = []
        nine.appendBigEndian(UInt64(9))
        #expect(stored[1] == nine)
    }

    /// The integers a committed transaction carries are the next transaction's without reading `meta` (bytes
    /// put there behind their back are not seen), and are dropped when another transaction committed between.
    @Test func carriedIntegersServeOnlyTheNextTransaction() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let meta = storage.core.meta
        let key = MetaIntegers.Key("test.carried")
        var eight: [UInt8] = []
        eight.appendBigEndian(UInt64(8))
        let carried = try await storage.core.writer.perform { context in
            let integers = MetaIntegers(txn: context.txn, meta: meta)
            try integers.adjust(key, by: 5)
            try integers.flush()
            return integers.carry()
        }
        let next = try await storage.core.writer.perform { context in
            try context.txn.put(meta, key: key.bytes, value: eight)
            return try MetaIntegers(txn: context.txn, meta: meta, carried: carried).stored(key)
        }
        #expect(next == 5)
        // That transaction committed the 8: `carried` is now two transactions old.
        let later = try await storage.core.writer.perform { context in
            try MetaIntegers(txn: context.txn, meta: meta, carried: carried).stored(key)
        }
        #expect(later == 8)
    }

    static func configuration() -> LocalStorageConfiguration {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = temporaryDirectory()
        configuration.expirySweepInterval = nil
        return configuration
    }
}
