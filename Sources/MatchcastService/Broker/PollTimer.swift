import MatchcastFeeds
import Synchronization

/// Where a match polled on its own waits for its next poll. A wait holds no task on serve's clock: a task keeps the
/// most memory it ever held until it ends (its allocator's slabs), so a task per match waiting between polls cost
/// several kilobytes a match, while a waiting action costs a few dozen bytes.
protocol PollTimer: Sendable {
    /// Runs `action` once `delay` has passed; after `stop` it may never run. Called from a poll on `executor`.
    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void)

    /// Drops what can be dropped of the waits (an action that runs after this must find its supervisor stopped).
    func stop()
}

/// serve's timer: each wait is an action in its event loop's wheel (`EventLoopClock.run(after:on:_:)`), which ends
/// as late as the sleep it replaces would have.
struct WheelPollTimer: PollTimer {
    let clock: EventLoopClock

    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void) {
        clock.run(after: delay, on: executor.eventLoop, action)
    }

    /// A wheel's actions are never cancelled: each runs when due, finds the supervisor stopped and does nothing.
    func stop() {}
}

/// Any other clock (a test's manual clock): each wait is a task sleeping on the clock, as the polls slept before.
final class SleepingPollTimer: PollTimer {
    private struct State {
        var next: UInt64 = 0
        var waiting: [UInt64: Task<Void, Never>] = [:]
        var stopped = false
    }

    private let clock: any Clock<Duration>
    private let state = Mutex(State())

    init(clock: any Clock<Duration>) {
        self.clock = clock
    }

    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard !state.stopped else { return }
            state.next += 1
            let id = state.next
            // Made under the lock, which the task takes to leave the list: it cannot leave before it is in.
            state.waiting[id] = Task(executorPreference: executor) { [clock, self] in
                let slept = (try? await clock.sleep(for: delay)) != nil
                let current = self.state.withLock { $0.waiting.removeValue(forKey: id) != nil }
                if slept, current { action() }
            }
        }
    }

    func stop() {
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for task in waiting { task.cancel() }
    }
}
