import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A record with optional values on every kind of index, for the differential test.
struct Item: LocalStorageIndexed, Equatable {
    let id: String
    var name: String?
    var score: Int?
    var weight: Double?
    var tag: String

    static var storageIndexes: [StorageIndex<Item>] {
        [
            .string("name") { $0.name },
            .number("score") { $0.score },
            .number("weight") { $0.weight },
            StorageIndex("tag", \.tag),
        ]
    }
}

/// The plain in-memory model the store is compared against.
struct ReferenceStore {
    struct Row {
        var item: Item
        var updated: Int
        var isExpired: Bool
    }

    var rows: [String: Row] = [:]
    var clock = 0

    enum Value: Equatable {
        case string([UInt8])
        case number(Double)

        static func < (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.string(let x), .string(let y)): return x.lexicographicallyPrecedes(y)
            case (.number(let x), .number(let y)): return x < y
            default: return false
            }
        }
    }

    static func value(_ item: Item, _ index: String) -> Value? {
        switch index {
        case "name": item.name.map { .string(Array($0.utf8)) }
        case "score": item.score.map { .number(Double($0)) }
        case "weight": item.weight.map { .number($0) }
        default: .string(Array(item.tag.utf8))
        }
    }

    enum Condition {
        case equals(Value)
        case atLeast(Value)
        case atMost(Value)
        case greaterThan(Value)
        case lessThan(Value)
        case between(Value, Value)
        case oneOf([Value])
        case prefix([UInt8])

        func matches(_ value: Value) -> Bool {
            switch self {
            case .equals(let v): value == v
            case .atLeast(let v): !(value < v)
            case .atMost(let v): !(v < value)
            case .greaterThan(let v): v < value
            case .lessThan(let v): value < v
            case .between(let a, let b): !(value < a) && !(b < value)
            case .oneOf(let values): values.contains(value)
            case .prefix(let p): if case .string(let s) = value { s.starts(with: p) } else { false }
            }
        }
    }

    func query(_ conditions: [(String, Condition)], sort: StorageIndexSort?, options: FetchOptions) -> [String] {
        let live = rows.values.filter { row in
            !row.isExpired
                && conditions.allSatisfy { index, condition in
                    ReferenceStore.value(row.item, index).map(condition.matches) ?? false
                }
        }
        /// A row with what it sorts by, worked out once (not once per comparison, where looking each up took a
        /// few percent of the whole suite's CPU time).
        typealias Sortable = (id: [UInt8], value: Value?, updated: Int)
        func idLess(_ a: Sortable, _ b: Sortable) -> Bool { a.id.lexicographicallyPrecedes(b.id) }
        let ascending: (Sortable, Sortable) -> Bool
        var descending = false
        let sortName = sort?.indexName
        if let sort {
            descending = sort.isDescending
            ascending = { a, b in
                switch (a.value, b.value) {
                case (nil, nil): return idLess(a, b)
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?): return x == y ? idLess(a, b) : x < y
                }
            }
        } else {
            switch options.sort {
            case .id: ascending = idLess
            case .newestFirst, .oldestFirst:
                descending = options.sort == .newestFirst
                ascending = { a, b in a.updated == b.updated ? idLess(a, b) : a.updated < b.updated }
            }
        }
        let rows: [Sortable] = live.map { row in
            (Array(row.item.id.utf8), sortName.flatMap { ReferenceStore.value(row.item, $0) }, row.updated)
        }
        let sorted = rows.sorted { descending ? ascending($1, $0) : ascending($0, $1) }.map {
            String(decoding: $0.id, as: UTF8.self)
        }
        let start = min(options.offset, sorted.count)
        let end = min(options.end, sorted.count)
        return start < end ? Array(sorted[start..<end]) : []
    }
}
