import Foundation

/// A fixed-seed Zipf trace and the reference caches the hit-rate test compares with.
public struct ZipfTrace: Sendable {
    public let keys: [Int]

    public init(keys count: Int, exponent: Double, length: Int, seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var cumulative: [Double] = []
        var total = 0.0
        for rank in 1...count {
            total += 1 / pow(Double(rank), exponent)
            cumulative.append(total)
        }
        keys = (0..<length).map { _ in
            let target = Double(random.next() >> 11) / Double(1 << 53) * total
            var low = 0
            var high = cumulative.count - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    /// The hit rate of an exact LRU cache of `capacity` filled on misses.
    public static func exactLRUHitRate(_ keys: [Int], capacity: Int) -> Double {
        var lastUse: [Int: Int] = [:]
        var hits = 0
        for (time, key) in keys.enumerated() {
            if lastUse[key] != nil { hits += 1 }
            lastUse[key] = time
            if lastUse.count > capacity, let victim = lastUse.min(by: { $0.value < $1.value })?.key {
                lastUse[victim] = nil
            }
        }
        return Double(hits) / Double(keys.count)
    }

    /// The hit rate of Redis's approximated LRU: evict the oldest of `sample` random keys.
    public static func sampledLRUHitRate(_ keys: [Int], capacity: Int, sample: Int, seed: UInt64) -> Double {
        var random = SplitMix64(seed: seed)
        var lastUse: [Int: Int] = [:]
        var held: [Int] = []
        var hits = 0
        for (time, key) in keys.enumerated() {
            if lastUse[key] != nil {
                hits += 1
            } else {
                held.append(key)
            }
            lastUse[key] = time
            if held.count > capacity {
                let candidates = (0..<sample).map { _ in random.below(held.count) }
                if let victim = candidates.min(by: { lastUse[held[$0]] ?? 0 < lastUse[held[$1]] ?? 0 }) {
                    lastUse[held[victim]] = nil
                    held.swapAt(victim, held.count - 1)
                    held.removeLast()
                }
            }
        }
        return Double(hits) / Double(keys.count)
    }
}
