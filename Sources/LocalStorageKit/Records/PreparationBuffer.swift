/// Memory for a batch's prepared records that child tasks initialize in disjoint ranges
/// (``LocalStorage/prepareAll(_:schema:)``), handed over to an array by moving the records.
///
/// Only the task given a range touches it, and the ranges are read only after every task has ended (the task
/// group's end orders the writes before the reads), hence `@unchecked Sendable`.
struct PreparationBuffer: @unchecked Sendable {
    /// What one task initialized: `start..<end`, and the error that stopped it, if any.
    struct Part: Sendable {
        let start: Int
        let end: Int
        let error: (any Error)?
    }

    private let base: UnsafeMutablePointer<PreparedRecord>

    init(capacity: Int) { base = .allocate(capacity: capacity) }

    /// Initializes `range` with `make(position)` in order, until the end or the first error.
    func fill(_ range: Range<Int>, _ make: (Int) throws -> PreparedRecord) -> Part {
        var next = range.lowerBound
        do {
            while next < range.upperBound {
                (base + next).initialize(to: try make(next))
                next += 1
            }
            return Part(start: range.lowerBound, end: next, error: nil)
        } catch {
            return Part(start: range.lowerBound, end: next, error: error)
        }
    }

    /// Destroys the records in `range`, which a ``fill(_:_:)`` initialized.
    func deinitialize(_ range: Range<Int>) {
        (base + range.lowerBound).deinitialize(count: range.count)
    }

    /// An array of the first `count` records, all initialized, moved out of the buffer (which then holds none).
    func moveAll(count: Int) -> [PreparedRecord] {
        [PreparedRecord](unsafeUninitializedCapacity: count) { target, initialized in
            if let address = target.baseAddress { address.moveInitialize(from: base, count: count) }
            initialized = target.baseAddress == nil ? 0 : count
        }
    }

    /// Frees the memory; every record in it must have been moved out or destroyed.
    func deallocate() { base.deallocate() }
}
