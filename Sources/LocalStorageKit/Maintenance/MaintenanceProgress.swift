/// How far a long maintenance operation has come, reported as it works.
@_spi(Maintenance) public struct MaintenanceProgress: Sendable, Equatable {
    /// What is being done, e.g. `"verify"` or `"export"`.
    public var task: String
    /// Units done so far (records, entries or bytes, as the task counts).
    public var completed: Int
    /// Units in all, when known.
    public var total: Int?

    /// A progress report.
    public init(task: String, completed: Int, total: Int?) {
        self.task = task
        self.completed = completed
        self.total = total
    }
}

/// Receives progress reports; called often, on the thread doing the work, so keep it cheap.
@_spi(Maintenance) public typealias MaintenanceProgressHandler = @Sendable (MaintenanceProgress) -> Void
