import Synchronization

/// Lets one async operation in at a time, in arrival order. An actor alone does not: every `await`
/// inside it lets another call interleave and work on state read before the wait.
package final class AsyncSerialGate: Sendable {
    package init() {}

    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    package func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                if state.busy {
                    state.waiting.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    package func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
