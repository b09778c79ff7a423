import Foundation
import Synchronization

/// Fans committed changes out to the change streams and live queries of each type.
///
/// ``LiveQueryCenter`` calls ``publish(_:)`` with every commit's changes, in commit order, whichever process made
/// it; subscribers must not block (they only yield into buffered streams or schedule a rerun).
final class ObserverHub: Sendable {
    typealias Subscriber = @Sendable ([PublishedChange]) -> Void

    private struct State {
        /// By type name, compared by bytes (``ExactName``) as the store keys types.
        var subscribers: [ExactName: [UInt64: Entry]] = [:]
        var nextToken: UInt64 = 0
    }

    private struct Entry {
        let subscriber: Subscriber
        /// Whether it reads each change's record (a change stream): called after the others.
        let readsRecords: Bool
    }

    private let state = Mutex(State())

    /// Whether anyone observes `typeName` (the writer skips building changes nobody reads).
    func hasSubscribers(_ typeName: String) -> Bool {
        state.withLock { !($0.subscribers[ExactName(typeName)]?.isEmpty ?? true) }
    }

    /// Whether anyone observes anything.
    var isObserved: Bool { state.withLock { !$0.subscribers.isEmpty } }

    /// The types someone observes.
    var observedTypeNames: [String] { state.withLock { $0.subscribers.keys.map(\.name) } }

    /// The number of subscribers across all types (tests check that ended streams free theirs).
    var subscriberCount: Int { state.withLock { $0.subscribers.values.reduce(0) { $0 + $1.count } } }

    /// Adds a subscriber for `typeName`; returns the token that removes it. A subscriber that `readsRecords`
    /// (a change stream: it queues other processes' changes for its own task to read, and reads at once what this
    /// process saved through another Swift type) is called after those that only note the changes (live queries, a
    /// record's watch), which then never wait for a read (trial94 #5).
    func subscribe(_ typeName: String, readsRecords: Bool = false, _ subscriber: @escaping Subscriber) -> UInt64 {
        state.withLock { state in
            state.nextToken += 1
            state.subscribers[ExactName(typeName), default: [:]][state.nextToken] = Entry(
                subscriber: subscriber, readsRecords: readsRecords)
            return state.nextToken
        }
    }

    /// Removes a subscriber.
    func unsubscribe(_ typeName: String, token: UInt64) {
        state.withLock { state in
            let name = ExactName(typeName)
            state.subscribers[name]?[token] = nil
            if state.subscribers[name]?.isEmpty == true { state.subscribers[name] = nil }
        }
    }

    /// Delivers one commit's changes, grouped by type, to that type's subscribers.
    func publish(_ changes: [PublishedChange]) {
        guard !changes.isEmpty else { return }
        let byType = Dictionary(grouping: changes) { ExactName($0.typeName) }
        let targets = state.withLock { state in
            byType.flatMap { name, changes in (state.subscribers[name] ?? [:]).values.map { ($0, changes) } }
        }
        // Those that only note the changes first (see `subscribe`).
        for (entry, changes) in targets where !entry.readsRecords { entry.subscriber(changes) }
        for (entry, changes) in targets where entry.readsRecords { entry.subscriber(changes) }
    }

    /// Tells every subscriber of `typeNames` that something changed outside this process: each is
    /// called with no changes (change streams ignore that; live queries rerun).
    func publishExternalChange(typeNames: [String]) {
        let subscribers = state.withLock { state in
            typeNames.flatMap { state.subscribers[ExactName($0)].map { Array($0.values) } ?? [] }
        }
        for entry in subscribers { entry.subscriber([]) }
    }
}
