import Synchronization

/// A clock that moves only when a test says so.
///
/// Sleepers suspend until `advance(by:)` or `advance(to:)` moves time to or past their deadline, and
/// are then resumed in deadline order. A cancelled sleeper throws `CancellationError` at once.
/// `waitForSleepers(count:)` lets a test wait until the code under test is parked on the clock, so
/// tests step time deterministically and never sleep for real.
///
/// ```swift
/// let clock = ManualClock()
/// async let done: Void = poller.run()
/// await clock.waitForSleepers(count: 1)
/// clock.advance(by: .seconds(5))
/// ```
public final class ManualClock: Clock, Sendable {
    /// A point on a manual clock: an offset from its origin.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable, CustomStringConvertible {
        public typealias Duration = Swift.Duration

        /// Time since the clock's origin.
        public var offset: Duration

        public init(offset: Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        public var description: String { "ManualClock.Instant(\(offset))" }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Waiter {
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: Instant
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        /// Sleepers cancelled before they had registered; they must not register.
        var cancelledEarly: Set<UInt64> = []
        var waiters: [UInt64: Waiter] = [:]
        var cancelledWaiters: Set<UInt64> = []

        mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }

        /// Waiters whose count the current sleepers satisfy, removed from the state.
        mutating func satisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            let ready = waiters.filter { $0.value.count <= sleepers.count }
            for id in ready.keys { waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
    }

    private let state: Mutex<State>

    public init(now: Instant = Instant(offset: .zero)) {
        state = Mutex(State(now: now))
    }

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are sleeping on this clock right now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone is sleeping until, if anyone is.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { $0.makeID() }
        // A cancellation racing a wake-up may leave a mark for an id that never registers.
        defer { state.withLock { _ = $0.cancelledEarly.remove(id) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action { case resume, cancel, wait([CheckedContinuation<Void, Never>]) }
                let action: Action = state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return .cancel }
                    if deadline <= state.now { return .resume }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .wait(state.satisfiedWaiters())
                }
                switch action {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .wait(let waiters): waiters.forEach { $0.resume() }
                }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    // Not registered yet (or already woken): make a late registration throw instead.
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualClock cannot go backwards")
        let woken = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            return Self.takeDue(&state)
        }
        woken.forEach { $0.resume() }
    }

    /// Moves time forward to `instant` (no change if it is already past) and wakes every sleeper due by then.
    public func advance(to instant: Instant) {
        let woken = state.withLock { state in
            state.now = max(state.now, instant)
            return Self.takeDue(&state)
        }
        woken.forEach { $0.resume() }
    }

    /// Returns once at least `count` tasks are sleeping on this clock (at once if they already are,
    /// or if the waiting task is cancelled).
    public func waitForSleepers(count: Int) async {
        let id = state.withLock { $0.makeID() }
        defer { state.withLock { _ = $0.cancelledWaiters.remove(id) } }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.cancelledWaiters.remove(id) != nil || state.sleepers.count >= count { return true }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.cancelledWaiters.insert(id)
                    return nil
                }
                return waiter
            }
            waiter?.continuation.resume()
        }
    }

    /// Like `waitForSleepers(count:)`, but gives up after `limit` of real time: true when `count` tasks sleep.
    public func waitForSleepers(count: Int, atMost limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitForSleepers(count: count); return true }
            group.addTask { (try? await ContinuousClock().sleep(for: limit)) == nil }
            let reached = await group.next() ?? false
            group.cancelAll()
            return reached
        }
    }

    /// Removes the sleepers due by `now`, earliest deadline first (ties in the order they slept).
    private static func takeDue(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        let due = state.sleepers.filter { $0.value.deadline <= state.now }
            .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
        for (id, _) in due { state.sleepers[id] = nil }
        return due.map(\.value.continuation)
    }
}

/// When the code under test is idle on a manual clock, for a test that steps virtual time: when as many tasks sleep
/// on it as the most seen asleep at once (at least `floor`). Work in between (a poll's store writes, a delivery) takes
/// real time, on a loaded machine far more than a few yields, and a step taken meanwhile would let the code's
/// virtual time run ahead of it. A loop that ends for good (a match's poll once the match is over) lowers the number
/// waited for after `patience` of real time.
public final class ClockIdleness: Sendable {
    private let clock: ManualClock
    private let patience: Duration
    private let most: Mutex<Int>

    public init(clock: ManualClock, floor: Int, patience: Duration = .seconds(1)) {
        self.clock = clock
        self.patience = patience
        most = Mutex(floor)
    }

    /// Returns once the code under test is idle, or after `patience` (then fewer loops are left).
    public func wait() async {
        let target = most.withLock { $0 }
        let reached = await clock.waitForSleepers(count: target, atMost: patience)
        let sleeping = clock.sleeperCount
        most.withLock { $0 = reached ? max($0, sleeping) : sleeping }
    }
}
