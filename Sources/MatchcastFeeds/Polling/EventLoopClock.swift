import NIOCore
import NIOPosix

/// Real time, whose sleeps wait on the event loop the sleeping task runs on (`EventLoopExecutor`): waking a poll then
/// takes no thread of its own. Off an event loop it sleeps as `ContinuousClock` does.
///
/// A sleep of `coalescingThreshold` or more ends at the next multiple of `slot` of the loop's clock, up to `slot`
/// late, and waits in the loop's `SleepWheel`: the polls due in the same slot wake their loop once, and thousands of
/// sleeping polls add one timer to the loop's timer heap rather than one each. Shorter sleeps are a timer of their
/// own and end when asked.
public struct EventLoopClock: Clock {
    public typealias Instant = ContinuousClock.Instant
    public typealias Duration = Swift.Duration

    /// How late a long sleep may end, so that sleeps ending close together end together.
    public static let slot = Duration.milliseconds(4)
    /// Shorter sleeps end when asked.
    public static let coalescingThreshold = Duration.milliseconds(100)

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
            let slotNanoseconds = UInt64(TimeAmount(Self.slot).nanoseconds)
            try await SleepWheel.of(loop).sleep(slot: due.uptimeNanoseconds / slotNanoseconds + 1)
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
