import Foundation
@testable import MatchcastFeeds
import NIOCore
import NIOPosix
import Testing

/// `EventLoopClock` as serve's polls use it: tasks run on an event loop (`EventLoopExecutor`), their long sleeps kept by
/// the loop's `SleepWheel`. The checks are lower bounds (a sleep never ends early) and outcomes, never upper bounds on
/// real time, so a busy machine only makes them slower.
@Suite("EventLoopClock: polls sleeping on their event loop", .serialized)
struct EventLoopClockTests {
    /// A loop of the suite's own, its tests one after the other, so no other test's sleepers share its wheel. Never
    /// shut down: a wheel holds its loop for the process's life.
    private static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    private static func withLoop<T: Sendable>(_ body: (EventLoopExecutor) async throws -> T) async throws -> T {
        try await body(EventLoopExecutor(group.next()))
    }

    /// Sleeps `duration` on the clock from a task on `executor`; returns how long it took and how it ended.
    private static func sleep(
        _ duration: Duration, on executor: EventLoopExecutor
    ) -> Task<(elapsed: Duration, cancelled: Bool), Never> {
        Task(executorPreference: executor) {
            let start = ContinuousClock.now
            do {
                try await EventLoopClock().sleep(for: duration)
                return (ContinuousClock.now - start, false)
            } catch {
                return (ContinuousClock.now - start, error is CancellationError)
            }
        }
    }

    @Test("hundreds of sleepers on one loop each wake, none before its time", .timeLimit(.minutes(1)))
    func manySleepers() async throws {
        try await Self.withLoop { executor in
            var rng = SystemRandomNumberGenerator()
            let durations = (0..<300).map { _ in Duration.milliseconds(Int.random(in: 100...600, using: &rng)) }
            let tasks = durations.map { Self.sleep($0, on: executor) }
            for (task, duration) in zip(tasks, durations) {
                let (elapsed, cancelled) = await task.value
                #expect(!cancelled)
                #expect(elapsed >= duration, "a sleep of \(duration) ended after \(elapsed)")
            }
        }
    }

    @Test("a cancelled sleep ends at once with CancellationError; the others sleep on and wake", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        try await Self.withLoop { executor in
            // The earliest sleeper is cancelled: the loop's timer pointed at its slot must move on to the next.
            let earliest = Self.sleep(.milliseconds(300), on: executor)
            let long = Self.sleep(.seconds(3600), on: executor)
            let later = Self.sleep(.milliseconds(700), on: executor)
            try await Task.sleep(for: .milliseconds(50))
            earliest.cancel()
            let (_, earliestCancelled) = await earliest.value
            #expect(earliestCancelled)

            let (laterElapsed, laterCancelled) = await later.value
            #expect(!laterCancelled && laterElapsed >= .milliseconds(700))
            // One sleeping after the cancellations still wakes.
            let (newElapsed, newCancelled) = await Self.sleep(.milliseconds(150), on: executor).value
            #expect(!newCancelled && newElapsed >= .milliseconds(150))

            long.cancel()
            let (longElapsed, longCancelled) = await long.value
            #expect(longCancelled && longElapsed < .seconds(3600))
        }
    }

    @Test("a task cancelled before it sleeps does not sleep")
    func cancelledBefore() async throws {
        try await Self.withLoop { executor in
            let task = Task(executorPreference: executor) { () -> Bool in
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    try await EventLoopClock().sleep(for: .seconds(3600))
                    return false
                } catch {
                    return error is CancellationError
                }
            }
            #expect(await task.value)
        }
    }

    @Test("the slot heap gives back every slot inserted, smallest first")
    func slotHeap() {
        var rng = SystemRandomNumberGenerator()
        var heap = SlotHeap()
        let slots = (0..<1_000).map { _ in UInt64.random(in: 0...500, using: &rng) }
        for slot in slots { heap.insert(slot) }
        var popped: [UInt64] = []
        while let slot = heap.min {
            popped.append(slot)
            heap.removeMin()
        }
        #expect(popped == slots.sorted())
    }
}
