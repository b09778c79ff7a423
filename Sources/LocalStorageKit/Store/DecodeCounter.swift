import Foundation
import Synchronization

/// Counts payload decodes (tests check that queries decode only the rows they return).
final class DecodeCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
