/// One filter, compiled into byte comparisons.
struct CompiledCondition: Sendable {
    enum Test: Sendable {
        /// The value is one of these (sorted by key, then value; no repeated value). Two long strings whose
        /// index keys are cut to the same bytes are two points with one key.
        case points([QueryBound])
        case range(lower: QueryBound?, lowerInclusive: Bool, upper: QueryBound?, upperInclusive: Bool)
        case prefix(key: [UInt8], value: [UInt8], keyIsCut: Bool)
    }

    let test: Test

    /// Whether an uncut index key satisfies the condition (exact: see ``OrderedKey``'s ordering notes).
    func matches(key: UnsafeRawBufferPointer) -> Bool {
        switch test {
        case .points(let points):
            return points.contains { key.elementsEqual($0.key) }
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            return within(key, lower?.key, lowerInclusive, upper?.key, upperInclusive)
        case .prefix(let prefix, _, let keyIsCut):
            return !keyIsCut && key.starts(with: prefix)
        }
    }

    /// Whether a value as a record header stores it satisfies the condition.
    func matches(value: UnsafeRawBufferPointer) -> Bool {
        switch test {
        case .points(let points):
            return points.contains { value.elementsEqual($0.value) }
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            return within(value, lower?.value, lowerInclusive, upper?.value, upperInclusive)
        case .prefix(_, let prefix, _):
            return value.starts(with: prefix)
        }
    }

    private func within(
        _ bytes: UnsafeRawBufferPointer, _ lower: [UInt8]?, _ lowerInclusive: Bool,
        _ upper: [UInt8]?, _ upperInclusive: Bool
    ) -> Bool {
        if let lower {
            let order = OrderedKey.compare(bytes, lower)
            if order < 0 || (order == 0 && !lowerInclusive) { return false }
        }
        if let upper {
            let order = OrderedKey.compare(bytes, upper)
            if order > 0 || (order == 0 && !upperInclusive) { return false }
        }
        return true
    }

    /// The runs of index keys that can hold matches, in ascending order.
    var intervals: [KeyInterval] {
        switch test {
        case .points(let points):
            // One run per distinct key: points sharing a cut key share its run (walked once, so no row twice).
            var intervals: [KeyInterval] = []
            for point in points where intervals.last?.lower != point.key {
                intervals.append(KeyInterval(lower: point.key, upper: point.key, prefix: nil))
            }
            return intervals
        case .range(let lower, _, let upper, _):
            return [KeyInterval(lower: lower?.key ?? IndexKeys.firstValue, upper: upper?.key, prefix: nil)]
        case .prefix(let key, _, _):
            return [KeyInterval(lower: key.isEmpty ? IndexKeys.firstValue : key, upper: nil, prefix: key)]
        }
    }
}
