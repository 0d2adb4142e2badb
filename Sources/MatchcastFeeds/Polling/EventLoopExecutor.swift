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
