import Synchronization

/// Counts the `deliver` calls in progress, so `flush()` can wait until everything handed over has left.
final class FCMInFlight: Sendable {
    private struct State {
        var active = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func enter() {
        state.withLock { $0.active += 1 }
    }

    func leave() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.active -= 1
            guard state.active == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at once when nothing is in progress, else when the last call in progress has returned.
    func idle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard state.active > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
