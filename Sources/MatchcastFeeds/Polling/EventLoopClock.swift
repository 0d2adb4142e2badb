import NIOCore
import NIOPosix

/// Real time, whose sleeps wait on the event loop the sleeping task runs on (`EventLoopExecutor`): waking a poll then
/// takes no thread of its own. Off an event loop it sleeps as `ContinuousClock` does.
///
/// A sleep of `coalescingThreshold` or more waits in the loop's `SleepWheel` and ends at the next multiple of its grid
/// on the loop's clock: `slot`, or for a longer sleep 2 or 4 slots, the most that stays within `toleranceDivisor`th of
/// it (a poll every second ends up to 16 ms late, one every 200 ms up to 4 ms). The polls due in the same grid step
/// wake their loop once, and thousands of sleeping polls add one timer to the loop's timer heap rather than one each.
/// Shorter sleeps are a timer of their own and end when asked.
public struct EventLoopClock: Clock {
    public typealias Instant = ContinuousClock.Instant
    public typealias Duration = Swift.Duration

    /// The wheel's unit, and how late a sleep of `coalescingThreshold` may end, so that sleeps ending close together
    /// end together.
    public static let slot = Duration.milliseconds(4)
    /// Shorter sleeps end when asked.
    public static let coalescingThreshold = Duration.milliseconds(100)
    /// A long sleep may end up to this fraction of itself late (in whole grids of 1, 2 or 4 slots).
    static let toleranceDivisor: Int64 = 32
    /// The coarsest grid, in slots: a sleep ends at most 16 ms late, however long.
    static let maxSlotsPerGrid: UInt64 = 4

    /// The wheel slot a sleep of `delay` (`coalescingThreshold` or more) due at `due` (the loop's uptime, in ns) ends
    /// in: the first multiple of its grid after `due`, never before it.
    static func wheelSlot(due: UInt64, delay: Duration) -> UInt64 {
        let slotNanoseconds = UInt64(TimeAmount(slot).nanoseconds)
        let tolerance = UInt64(max(0, TimeAmount(delay).nanoseconds / toleranceDivisor))
        var slotsPerGrid: UInt64 = 1
        while slotsPerGrid < maxSlotsPerGrid, slotNanoseconds * slotsPerGrid * 2 <= tolerance { slotsPerGrid *= 2 }
        return (due / (slotNanoseconds * slotsPerGrid) + 1) * slotsPerGrid
    }

    public init() {}

    public var now: Instant { ContinuousClock.now }
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
            return
        }
        try Task.checkCancellation()
        let delay = ContinuousClock.now.duration(to: deadline)
        guard delay > .zero else { return }
        let due = NIODeadline.now() + TimeAmount(delay)
        if delay >= Self.coalescingThreshold {
            try await SleepWheel.of(loop).sleep(slot: Self.wheelSlot(due: due.uptimeNanoseconds, delay: delay))
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
