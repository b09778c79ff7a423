/// What the writer reports to after each commit: the layer above (Observation/) implements it, so that
/// Records/ never names the observers it feeds.
protocol CommitListener: Sendable {
    /// Whether anyone observes the type called `typeName`: writers skip building changes nobody reads.
    func hasSubscribers(_ typeName: String) -> Bool
    /// The changes of one commit, in commit order, called on the writer thread after the commit; `logged` is
    /// the range of change-log sequence numbers the commit wrote (nil when it wrote none).
    func publish(_ changes: [PublishedChange], logged: ClosedRange<UInt64>?)
}
