/// A mutable cell that a workload's closures share: the store or inputs of the current batch.
final class Slot<Value> {
    var value: Value?

    init(_ value: Value? = nil) {
        self.value = value
    }

    /// The value, or an error naming what is missing.
    func get(_ what: String) throws -> Value {
        guard let value else { throw BenchmarkError("\(what) was not prepared") }
        return value
    }
}
