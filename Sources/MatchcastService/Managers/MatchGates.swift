import Synchronization

/// One async operation at a time per match, in arrival order, while operations on different matches run side by
/// side; an exclusive entry (`enterAll`) waits until no match is held and keeps every match out while it runs.
///
/// `LifecycleManager` is an actor, but an actor alone does not keep its operations apart: every `await` inside one
/// (a store write, a send) lets another in, to work on state read before the wait. Operations on one match must not
/// interleave (a follow's activity is saved before the next follow looks for it; a fan-out's chunks go out in
/// order); operations on different matches touch different state and may. So each match has a gate of its own, and
/// the commits of different matches, each waiting for the disk, overlap.
///
/// Fairness: a match's entrants go in the order they arrived. Once an exclusive entry waits, no match is let in
/// any more (those already in finish), so it is not starved; the matches queued meanwhile go in after it.
final class MatchGates: Sendable {
    private struct State {
        /// Matches whose operation is running.
        var held: Set<String> = []
        /// Entrants waiting for a match, in arrival order per match.
        var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]
        var exclusive = false
        /// Exclusive entrants waiting, in arrival order.
        var waitingExclusive: [CheckedContinuation<Void, Never>] = []

        /// Holds `matchId` when nothing runs or waits on it and no exclusive operation runs or waits.
        mutating func admit(_ matchId: String) -> Bool {
            if exclusive || !waitingExclusive.isEmpty || held.contains(matchId) || waiting[matchId] != nil {
                return false
            }
            held.insert(matchId)
            return true
        }
    }

    private let state = Mutex(State())

    /// Waits until no other operation runs on `matchId` and no exclusive one runs or waits.
    func enter(_ matchId: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                guard state.admit(matchId) else {
                    state.waiting[matchId, default: []].append(continuation)
                    return false
                }
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// Goes in at once when `enter` would not wait; false (and nothing changed) otherwise.
    func tryEnter(_ matchId: String) -> Bool {
        state.withLock { $0.admit(matchId) }
    }

    /// The operation on `matchId` is over: the next one on it goes in, unless an exclusive one waits (that goes in
    /// once no match is held).
    func leave(_ matchId: String) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waitingExclusive.isEmpty, var queue = state.waiting[matchId] {
                // Handed on: the match stays held.
                let next = queue.removeFirst()
                state.waiting[matchId] = queue.isEmpty ? nil : queue
                return next
            }
            state.held.remove(matchId)
            guard state.held.isEmpty, !state.waitingExclusive.isEmpty else { return nil }
            state.exclusive = true
            return state.waitingExclusive.removeFirst()
        }
        next?.resume()
    }

    /// Waits until no operation runs on any match, then keeps every match out until `leaveAll`.
    func enterAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                if state.exclusive || !state.held.isEmpty || !state.waitingExclusive.isEmpty {
                    state.waitingExclusive.append(continuation)
                    return false
                }
                state.exclusive = true
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// The exclusive operation is over: the next exclusive one goes in if one waits, otherwise the first waiting
    /// operation of every match.
    func leaveAll() {
        let next = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if !state.waitingExclusive.isEmpty { return [state.waitingExclusive.removeFirst()] }
            state.exclusive = false
            var admitted: [CheckedContinuation<Void, Never>] = []
            for (matchId, var queue) in state.waiting {
                admitted.append(queue.removeFirst())
                state.held.insert(matchId)
                state.waiting[matchId] = queue.isEmpty ? nil : queue
            }
            return admitted
        }
        for continuation in next { continuation.resume() }
    }
}
