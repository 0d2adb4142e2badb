import MatchcastFeeds

/// Where a match polled on its own waits for its next poll. A wait holds no task on serve's clock: a task keeps the
/// most memory it ever held until it ends (its allocator's slabs), so a task per match waiting between polls cost
/// several kilobytes a match, while a waiting action costs a few dozen bytes.
protocol PollTimer: Sendable {
    /// Runs `action` once `delay` has passed; after `stop` it may never run. Called from a poll on `executor`.
    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void)

    /// Drops what can be dropped of the waits (an action that runs after this must find its supervisor stopped).
    func stop() async
}

/// serve's timer: each wait is an action in its event loop's wheel (`EventLoopClock.run(after:on:_:)`), which ends
/// as late as the sleep it replaces would have.
struct WheelPollTimer: PollTimer {
    let clock: EventLoopClock

    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void) {
        clock.run(after: delay, on: executor.eventLoop, action)
    }

    /// A wheel's actions are never cancelled: each runs when due, finds the supervisor stopped and does nothing.
    func stop() async {}
}

/// Any other clock (a test's manual clock): each wait is a task sleeping on the clock, as the polls slept before.
struct SleepingPollTimer: PollTimer {
    let clock: any Clock<Duration>
    private let waits = PollRuns()

    init(clock: any Clock<Duration>) {
        self.clock = clock
    }

    func schedule(after delay: Duration, on executor: EventLoopExecutor, _ action: @escaping @Sendable () -> Void) {
        _ = waits.start(on: executor) { [clock] in
            if (try? await clock.sleep(for: delay)) != nil { action() }
        }
    }

    /// Cancels the waits (their actions never run) and returns once they have ended.
    func stop() async { await waits.stop() }
}
