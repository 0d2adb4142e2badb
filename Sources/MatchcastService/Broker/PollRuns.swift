import MatchcastFeeds
import Synchronization

/// The matches' own polls running now, each in a task that lives for one poll (`PollSupervisor`): `stop` cancels them
/// and waits for them to end, as a task group would at its end.
final class PollRuns: Sendable {
    private struct State {
        var stopped = false
        var next: UInt64 = 0
        var tasks: [UInt64: Task<Void, Never>] = [:]
        /// Tasks that ended before `start` put them in `tasks`.
        var endedEarly: Set<UInt64> = []
        var count = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// How many run now (for tests).
    var count: Int { state.withLock { $0.count } }

    /// Runs `body` in a task of its own on `executor`; false, running nothing, once stopped.
    func start(on executor: EventLoopExecutor, _ body: @escaping @Sendable () async -> Void) -> Bool {
        let id = state.withLock { state -> UInt64? in
            guard !state.stopped else { return nil }
            state.next += 1
            state.count += 1
            return state.next
        }
        guard let id else { return false }
        let task = Task(executorPreference: executor) {
            await body()
            self.ended(id)
        }
        let cancel = state.withLock { state -> Bool in
            if state.endedEarly.remove(id) == nil { state.tasks[id] = task }
            return state.stopped
        }
        if cancel { task.cancel() }
        return true
    }

    private func ended(_ id: UInt64) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.tasks.removeValue(forKey: id) == nil { state.endedEarly.insert(id) }
            state.count -= 1
            guard state.count == 0 else { return [] }
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
                if state.count == 0 { return true }
                state.waiters.append(waiter)
                return false
            }
            if done { waiter.resume() }
        }
    }
}
