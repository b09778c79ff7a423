/// Placeholder for live-query bookkeeping (issue 5).
final class LiveQueryCenter: Sendable {
    init(environment: Environment, hub: ObserverHub, pollInterval: Duration) {}
    func stop() {}
}
