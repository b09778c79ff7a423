import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A key path index reads a property stored inline at its offset instead of projecting the key path; whatever
/// the property (nested, optional, in a class, computed), the value is the key path's.
@Suite struct IndexExtractionTests {
    struct Inner: Sendable {
        var label: String
        var weight: Double?
    }

    struct Shape: Sendable {
        var flag: Bool
        var name: String
        var nickname: String?
        var inner: Inner
        var count: Int8
        var big: UInt64
        var score: Float?
        var computed: String { name + "!" }
    }

    final class Box: Sendable {
        let name: String
        let size: Int?
        init(name: String, size: Int?) {
            self.name = name
            self.size = size
        }
    }

    static func random(_ random: inout SplitMix64) -> Shape {
        func text() -> String {
            String((0..<Int(random.next() % 40)).map { _ in Character(UnicodeScalar(UInt8(32 + random.next() % 90))) })
        }
        return Shape(
            flag: random.next() % 2 == 0, name: text(), nickname: random.next() % 3 == 0 ? nil : text(),
            inner: Inner(label: text(), weight: random.next() % 4 == 0 ? nil : Double(random.next() % 1000) / 7),
            count: Int8(truncatingIfNeeded: random.next()), big: random.next(),
            score: random.next() % 2 == 0 ? nil : Float(random.next() % 100) / 3)
    }

    @Test func keyPathIndexesReadWhatTheKeyPathProjects() {
        let indexes: [StorageIndex<Shape>] = [
            StorageIndex("flag", \.flag), StorageIndex("name", \.name), StorageIndex("nickname", \.nickname),
            StorageIndex("label", \.inner.label), StorageIndex("weight", \.inner.weight),
            StorageIndex("count", \.count), StorageIndex("big", \.big), StorageIndex("score", \.score),
            StorageIndex("computed", \.computed),
        ]
        let projected: [(Shape) -> IndexValue?] = [
            { .number($0.flag.storageNumber.value) }, { .string($0.name) }, { $0.nickname.map(IndexValue.string) },
            { .string($0.inner.label) }, { $0.inner.weight.map { .number($0.storageNumber.value) } },
            { .number($0.count.storageNumber.value) }, { .number($0.big.storageNumber.value) },
            { $0.score.map { .number($0.storageNumber.value) } }, { .string($0.computed) },
        ]
        var random = SplitMix64(seed: 91)
        for _ in 0..<500 {
            let shape = Self.random(&random)
            for (index, expected) in zip(indexes, projected) {
                #expect(index.extract(shape)?.storedBytes == expected(shape)?.storedBytes, "\(index.name)")
            }
        }
        let boxed: [StorageIndex<Box>] = [StorageIndex("name", \.name), StorageIndex("size", \.size)]
        let box = Box(name: "boxed", size: 7)
        #expect(boxed[0].extract(box)?.storedBytes == IndexValue.string("boxed").storedBytes)
        #expect(boxed[1].extract(box)?.storedBytes == IndexValue.number(7.storageNumber.value).storedBytes)
        #expect(boxed[1].extract(Box(name: "", size: nil)) == nil)
    }
}
