import Foundation

/// The cache traces of the hit-ratio harness (`make bench-hitratio`): fixed-seed request sequences of
/// integer ids, and Belady's optimum on them.
public struct HitRatioTrace: Sendable {
    public let name: String
    public let keys: [Int]

    /// The harness's traces for a cache of `cacheSize` records over `objects` ids, each of `length` requests
    /// (the scan trace adds its scans on top).
    public static func standard(objects: Int, length: Int, cacheSize: Int) -> [HitRatioTrace] {
        [
            HitRatioTrace(
                name: "zipf-0.8", keys: ZipfTrace(keys: objects, exponent: 0.8, length: length, seed: 81).keys),
            HitRatioTrace(
                name: "zipf-1.0", keys: ZipfTrace(keys: objects, exponent: 1.0, length: length, seed: 101).keys),
            scans(objects: objects, length: length),
            shifting(objects: objects, length: length),
            loop(objects: objects, length: length, cacheSize: cacheSize),
        ]
    }

    /// Zipf 0.9, with a one-pass scan of `objects / 20` ids never seen before after every `length / 16`
    /// requests.
    public static func scans(objects: Int, length: Int) -> HitRatioTrace {
        let base = ZipfTrace(keys: objects, exponent: 0.9, length: length, seed: 91).keys
        let every = max(1, length / 16)
        let scanLength = max(1, objects / 20)
        var keys: [Int] = []
        var next = objects
        for (offset, key) in base.enumerated() {
            keys.append(key)
            if (offset + 1) % every == 0 {
                keys.append(contentsOf: next..<(next + scanLength))
                next += scanLength
            }
        }
        return HitRatioTrace(name: "zipf+scans", keys: keys)
    }

    /// Zipf 0.9 in four phases; each phase gives the popular ranks to other ids (shifted by a quarter).
    public static func shifting(objects: Int, length: Int) -> HitRatioTrace {
        let base = ZipfTrace(keys: objects, exponent: 0.9, length: length, seed: 92).keys
        let phase = max(1, length / 4)
        let keys = base.enumerated().map { offset, rank in (rank + (offset / phase) * (objects / 4)) % objects }
        return HitRatioTrace(name: "zipf-shifting", keys: keys)
    }

    /// Half the requests walk a loop of 1.2 × the cache size (ids of their own), in order, again and again;
    /// the other half are Zipf 0.8 over the objects.
    public static func loop(objects: Int, length: Int, cacheSize: Int) -> HitRatioTrace {
        let base = ZipfTrace(keys: objects, exponent: 0.8, length: length, seed: 93).keys
        var random = SplitMix64(seed: 94)
        let loopLength = max(2, cacheSize * 6 / 5)
        var at = 0
        let keys = base.map { key -> Int in
            guard random.below(2) == 0 else { return key }
            defer { at = (at + 1) % loopLength }
            return objects + at
        }
        return HitRatioTrace(name: "zipf+loop", keys: keys)
    }

    /// Belady's optimum (evict the held id used again furthest in the future; every miss is admitted): its
    /// miss ratio on `keys` with a cache of `capacity`.
    public static func beladyMissRatio(_ keys: [Int], capacity: Int) -> Double {
        var nextUse = [Int](repeating: Int.max, count: keys.count)
        var seen: [Int: Int] = [:]
        for index in stride(from: keys.count - 1, through: 0, by: -1) {
            nextUse[index] = seen[keys[index]] ?? Int.max
            seen[keys[index]] = index
        }
        var held: [Int: Int] = [:]  // id → its next use
        var heap = MaxHeap()
        var misses = 0
        for (index, key) in keys.enumerated() {
            if held[key] == nil {
                misses += 1
                if held.count >= capacity {
                    while let top = heap.pop() {
                        if held[top.key] == top.next {
                            held[top.key] = nil
                            break
                        }
                    }
                }
            }
            held[key] = nextUse[index]
            heap.push(next: nextUse[index], key: key)
        }
        return Double(misses) / Double(max(1, keys.count))
    }

    /// A binary max-heap of (next use, id), with stale entries skipped by the caller.
    struct MaxHeap {
        private var items: [(next: Int, key: Int)] = []

        mutating func push(next: Int, key: Int) {
            items.append((next, key))
            var child = items.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard items[parent].next < items[child].next else { break }
                items.swapAt(parent, child)
                child = parent
            }
        }

        mutating func pop() -> (next: Int, key: Int)? {
            guard let top = items.first else { return nil }
            let last = items.removeLast()
            if !items.isEmpty {
                items[0] = last
                var parent = 0
                while true {
                    let left = 2 * parent + 1
                    let right = left + 1
                    var largest = parent
                    if left < items.count, items[left].next > items[largest].next { largest = left }
                    if right < items.count, items[right].next > items[largest].next { largest = right }
                    if largest == parent { break }
                    items.swapAt(parent, largest)
                    parent = largest
                }
            }
            return top
        }
    }
}
