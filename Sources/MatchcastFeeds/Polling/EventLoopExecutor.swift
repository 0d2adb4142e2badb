import NIOCore
import NIOPosix
import Synchronization

/// A task executor that runs jobs on one SwiftNIO event loop. A poll run on the event loop its HTTP client uses
/// sends its request, reads the answer and resumes where it awaited on one thread, with no hand-over to Swift's
/// cooperative pool and back on every request: on a machine with few cores those hand-overs (thread wake-ups and
/// context switches) cost more than the poll itself.
///
/// Only short, non-blocking work belongs here (an unchanged answer, a small decode); anything long — ingesting a
/// change, a fan-out — moves off with `withTaskExecutorPreference(globalConcurrentExecutor)`.
public final class EventLoopExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }

    /// One executor per event loop of `group`, handed out in turn.
    public final class Pool: Sendable {
        private let executors: [EventLoopExecutor]
        private let next = Atomic<UInt>(0)

        public init(_ group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
            executors = group.makeIterator().map(EventLoopExecutor.init)
        }

        public func take() -> EventLoopExecutor {
            executors[Int(next.add(1, ordering: .relaxed).oldValue % UInt(executors.count))]
        }
    }
}

/// Real time, whose sleeps are timers of the event loop the sleeping task runs on (`EventLoopExecutor`): waking a
/// poll then takes no thread of its own. Off an event loop it sleeps as `ContinuousClock` does.
///
/// A sleep of `coalescingThreshold` or more ends at the next multiple of `slot` of the loop's clock, up to `slot`
/// late: the polls due within the same few milliseconds wake their loop once, not once each.
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
        var due = NIODeadline.now() + TimeAmount(delay)
        if delay >= Self.coalescingThreshold {
            let slot = UInt64(TimeAmount(Self.slot).nanoseconds)
            let (rounded, overflow) = (due.uptimeNanoseconds / slot + 1).multipliedReportingOverflow(by: slot)
            if !overflow { due = .uptimeNanoseconds(rounded) }
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
