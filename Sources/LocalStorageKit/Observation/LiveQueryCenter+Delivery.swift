/// How the follower's queue reaches observers: one thread at a time, in commit order, with no lock held while
/// subscribers run.
extension LiveQueryCenter {
    /// What the queue delivers next.
    enum Delivery {
        /// Changes of one or more commits, in commit order.
        case changes([PublishedChange])
        /// Something changed that the log could not say: every observed type's live queries rerun.
        case everyObservedType
    }

    /// Makes the caller the one delivering the queue, unless another thread is or the queue is empty.
    static func claimDelivery(_ state: inout State) -> Bool {
        guard !state.isDelivering, !state.queue.isEmpty else { return false }
        state.isDelivering = true
        return true
    }

    /// Delivers the queue in order until it is empty, calling subscribers with no lock held: a subscriber
    /// that ends the store's last reference (and so waits for the writer) never blocks a delivery, and the
    /// writer never waits for another thread's subscribers.
    func deliverQueue() {
        while true {
            let next = state.withLock { state -> Delivery? in
                guard !state.queue.isEmpty else {
                    state.isDelivering = false
                    return nil
                }
                return state.queue.removeFirst()
            }
            switch next {
            case nil: return
            case .changes(let changes): hub.publish(changes)
            case .everyObservedType: hub.publishExternalChange(typeNames: hub.observedTypeNames)
            }
        }
    }
}
