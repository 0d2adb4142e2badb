import MatchcastFeeds
import Synchronization

/// Tasks that each live for one piece of polling work: a match's poll (`PollSupervisor`), or a wait for the next one
/// on a clock other than serve's (`SleepingPollTimer`). `stop` cancels them and waits for them to end, as a task
/// group would at its end.
final class PollRuns: Sendable {
    private struct State {
        var stopped = false
        var next: UInt64 = 0
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// How many run now (for tests).
    var count: Int { state.withLock { $0.tasks.count } }

    /// Runs `body` in a task of its own on `executor`; false, running nothing, once stopped.
    func start(on executor: EventLoopExecutor, _ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.next += 1
            let id = state.next
            // Made under the lock, which the task takes to leave `tasks`: it cannot leave before it is in.
            state.tasks[id] = Task(executorPreference: executor) {
                await body()
                self.ended(id)
            }
            return true
        }
    }

    private func ended(_ id: UInt64) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.tasks[id] = nil
            guard state.tasks.isEmpty else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Starts no more, cancels those running and returns when they have ended.
    func stop() async {
        let running = state.withLock { state in
            state.stopped = true
            return Array(state.tasks.values)
        }
        for task in running { task.cancel() }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.tasks.isEmpty { return true }
                state.waiters.append(waiter)
                return false
            }
            if done { waiter.resume() }
        }
    }
}
