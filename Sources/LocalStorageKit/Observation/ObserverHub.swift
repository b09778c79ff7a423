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
        var subscribers: [ExactName: [UInt64: Subscriber]] = [:]
        var nextToken: UInt64 = 0
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

    /// Adds a subscriber for `typeName`; returns the token that removes it.
    func subscribe(_ typeName: String, _ subscriber: @escaping Subscriber) -> UInt64 {
        state.withLock { state in
            state.nextToken += 1
            state.subscribers[ExactName(typeName), default: [:]][state.nextToken] = subscriber
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
            byType.compactMap { name, changes in
                state.subscribers[name].map { (Array($0.values), changes) }
            }
        }
        for (subscribers, changes) in targets {
            for subscriber in subscribers { subscriber(changes) }
        }
    }

    /// Tells every subscriber of `typeNames` that something changed outside this process: each is
    /// called with no changes (change streams ignore that; live queries rerun).
    func publishExternalChange(typeNames: [String]) {
        let subscribers = state.withLock { state in
            typeNames.flatMap { state.subscribers[ExactName($0)].map { Array($0.values) } ?? [] }
        }
        for subscriber in subscribers { subscriber([]) }
    }
}
