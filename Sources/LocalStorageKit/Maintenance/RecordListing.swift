/// What `list` asks for: a page of a type's records, optionally filtered and ordered by its indexes.
@_spi(Maintenance) public struct ListQuery: Sendable, Equatable {
    /// An equality condition on one index; `value` is parsed according to the index's kind.
    public struct Condition: Sendable, Equatable {
        /// The index name.
        public var index: String
        /// The value as text: a string, or a number (`42`, `-1.5`, `true`, `+Infinity`) for a number index.
        public var value: String

        /// A condition `index == value`.
        public init(index: String, value: String) {
            self.index = index
            self.value = value
        }
    }

    /// An order by one index.
    public struct Order: Sendable, Equatable {
        /// The index name.
        public var index: String
        /// Largest values first.
        public var isDescending: Bool

        /// An order by `index`.
        public init(index: String, isDescending: Bool) {
            self.index = index
            self.isDescending = isDescending
        }
    }

    /// The most records to return; nil for all.
    public var limit: Int?
    /// Records to skip first.
    public var offset: Int
    /// Conditions every listed record meets.
    public var conditions: [Condition]
    /// The order; nil lists by id.
    public var order: Order?

    /// A query; by default every record, by id.
    public init(limit: Int? = nil, offset: Int = 0, conditions: [Condition] = [], order: Order? = nil) {
        self.limit = limit
        self.offset = offset
        self.conditions = conditions
        self.order = order
    }
}

/// What `list` returns: the records of the page, and the damaged records met on the way.
@_spi(Maintenance) public struct RecordListing: Codable, Sendable {
    /// The records, in the query's order.
    public var records: [RecordSummary]
    /// Records whose header cannot be read; they take their place in the page like any other.
    public var damaged: [VerifyProblem]
}
