import Foundation
import LocalStorageKit
import LocalStorageTestSupport

/// The queries a planner gets wrong when it cannot count (issue 21): filters without an order, whose cost
/// must grow with the number of matches and never with the number of records. The scaling table runs them
/// at each size, 1,000,000 records included (`--scaling 1000000`).
extension Workloads {
    /// The number of rows `between(price)` returns in ``unorderedRange(_:_:records:generator:)``.
    static let unorderedRows = 1_000

    /// `between(price)` without an order or a limit, about 1,000 rows at every size: the width that
    /// makes 1,000 of `records` uniform prices in 1.00 ... 999.99 fall in range.
    static func unorderedRange(
        _ stores: Stores, _ sizes: QuerySizes, records: Int, generator: inout SplitMix64
    ) -> Workload {
        let width = 999 * Double(unorderedRows) / Double(max(records, 1))
        let ranges = sizes.inputs { priceRange(width: min(width, 998), using: &generator) }
        return queryWorkload(
            name: "range-unordered", label: "between(price), ~1,000 rows, no order",
            description: "fetch matching .between(\"price\", a...a+\(String(format: "%.2f", width))), no order, "
                + "no limit: about \(unorderedRows) rows at every size, decoded",
            sizes: sizes, targetRatio: 2, stores: stores, inputs: ranges,
            localStorageKit: { try await $0.fetchUnordered(priceIn: $1, limit: nil) },
            raw: { try $0.fetchUnordered(priceIn: $1, limit: nil) },
            sqlite: { try $0.fetchUnordered(priceIn: $1, limit: nil) })
    }

    /// `between(price)` over a tenth of the records, no order, limit 20: any 20 matches will do.
    static func unorderedRangeLimit(_ stores: Stores, _ sizes: QuerySizes, generator: inout SplitMix64) -> Workload {
        let ranges = sizes.inputs { priceRange(using: &generator) }
        return queryWorkload(
            name: "range-unordered-limit", label: "between(price), limit 20, no order",
            description: "fetch matching .between(\"price\", a...a+\(Int(rangeWidth))), no order, limit \(limit), "
                + "decoded (~10% of the records match)",
            sizes: sizes, targetRatio: 2, stores: stores, inputs: ranges,
            localStorageKit: { try await $0.fetchUnordered(priceIn: $1, limit: limit) },
            raw: { try $0.fetchUnordered(priceIn: $1, limit: limit) },
            sqlite: { try $0.fetchUnordered(priceIn: $1, limit: limit) })
    }

    /// `equals(price)` on one price: about one record in 99,900 matches.
    static func equalsPrice(_ stores: Stores, _ sizes: QuerySizes, generator: inout SplitMix64) -> Workload {
        let prices = sizes.inputs { Product.randomPrice(using: &generator) }
        return queryWorkload(
            name: "equals-price", label: "equals(price), no order",
            description: "fetch matching .equals(\"price\", p), no order, no limit, decoded "
                + "(one record in 99,900 matches)",
            sizes: sizes, targetRatio: 2, stores: stores, inputs: prices,
            localStorageKit: { try await $0.fetch(priceEquals: $1) },
            raw: { try $0.fetchUnordered(priceIn: $1...$1, limit: nil) },
            sqlite: { try $0.fetchUnordered(priceIn: $1...$1, limit: nil) })
    }
}
