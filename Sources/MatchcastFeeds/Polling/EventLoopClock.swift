import NIOCore
import NIOPosix

/// Real time, whose sleeps wait on the event loop the sleeping task runs on (`EventLoopExecutor`): waking a poll then
/// takes no thread of its own. Off an event loop it sleeps as `ContinuousClock` does.
///
/// A sleep of `coalescingThreshold` or more whose tolerance is a `slot` or more waits in the loop's `SleepWheel` and
/// ends at the next multiple of its grid on the loop's clock: 1, 2 or 4 slots, the coarsest within its tolerance. The
/// tolerance not given is a 32nd of the sleep, at least a slot (a poll every second ends up to 16 ms late, one every
/// 200 ms up to 4 ms). The polls due in the same grid step wake their loop once, and thousands of sleeping polls add
/// one timer to the loop's timer heap rather than one each. Other sleeps are a timer of their own and end when asked.
public struct EventLoopClock: Clock {
    public typealias Instant = ContinuousClock.Instant
    public typealias Duration = Swift.Duration

    /// The wheel's unit: the least a sleep waiting in it may end late, so that sleeps ending close together end
    /// together.
    public static let slot = Duration.milliseconds(4)
    /// Shorter sleeps end when asked.
    public static let coalescingThreshold = Duration.milliseconds(100)
    /// How late a sleep of `delay` may end when its caller gives no tolerance: a 32nd of it, at least a slot.
    static func defaultTolerance(for delay: Duration) -> Duration {
        max(slot, delay / 32)
    }

    /// The wheel slot a sleep due at `due` (the loop's uptime, in ns) that may end up to `tolerance` late (a `slot` or
    /// more) ends in: the first multiple of its grid after `due`, never before it. The grid is 1, 2 or 4 slots, the
    /// coarsest within the tolerance: a sleep ends at most 16 ms late, whatever its tolerance.
    static func wheelSlot(due: UInt64, tolerance: Duration) -> UInt64 {
        let slotsPerGrid: UInt64 = tolerance >= slot * 4 ? 4 : tolerance >= slot * 2 ? 2 : 1
        return (due / (slotNanoseconds * slotsPerGrid) + 1) * slotsPerGrid
    }

    private static let slotNanoseconds = UInt64(TimeAmount(slot).nanoseconds)

    public init() {}

    public var now: Instant { ContinuousClock.now }
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Runs `action` on `loop` once `delay` has passed, ending as late as a sleep of `delay` without a tolerance would,
    /// with no task waiting meanwhile: a match's next poll waits here between its polls, so a polled match holds no
    /// task (and none of a task's memory) while it waits. Long delays wait in the loop's wheel, short ones are a timer
    /// of their own. Never cancelled; dropped if the loop shuts down first.
    public func run(after delay: Duration, on loop: any EventLoop, _ action: @escaping @Sendable () -> Void) {
        guard delay > .zero else {
            loop.execute(action)
            return
        }
        let due = NIODeadline.now() + TimeAmount(delay)
        let slot = Self.wheelSlot(delay: delay, due: due, tolerance: nil)
        guard loop.inEventLoop else {
            loop.execute { Self.run(at: due, slot: slot, on: loop, action) }
            return
        }
        Self.run(at: due, slot: slot, on: loop, action)
    }

    /// Where a wait of `delay`, due at `due`, ends: the wheel slot of a long wait that may end a slot or more late,
    /// nil for a wait that is a timer of its own. Without a tolerance, a 32nd of the wait.
    private static func wheelSlot(delay: Duration, due: NIODeadline, tolerance: Duration?) -> UInt64? {
        let tolerance = tolerance ?? defaultTolerance(for: delay)
        guard delay >= coalescingThreshold, tolerance >= slot else { return nil }
        return wheelSlot(due: due.uptimeNanoseconds, tolerance: tolerance)
    }

    private static func run(at due: NIODeadline, slot: UInt64?, on loop: any EventLoop, _ action: @escaping @Sendable () -> Void) {
        if let slot {
            SleepWheel.of(loop).run(slot: slot, action)
        } else {
            _ = loop.scheduleTask(deadline: due, action)
        }
    }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
            return
        }
        try Task.checkCancellation()
        let delay = ContinuousClock.now.duration(to: deadline)
        guard delay > .zero else { return }
        let due = NIODeadline.now() + TimeAmount(delay)
        if let slot = Self.wheelSlot(delay: delay, due: due, tolerance: tolerance) {
            try await SleepWheel.of(loop).sleep(slot: slot)
            return
        }
        let scheduled = loop.scheduleTask(deadline: due) {}
        do {
            try await withTaskCancellationHandler {
                try await scheduled.futureResult.get()
            } onCancel: {
                scheduled.cancel()
            }
        } catch {
            // A cancelled timer fails its future with `EventLoopError.cancelled`; a cancelled sleep throws as Task.sleep does.
            throw CancellationError()
        }
    }
}
