import Foundation
@testable import MatchcastFeeds
import NIOCore
import NIOPosix
import Synchronization
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
        _ duration: Duration, tolerance: Duration? = nil, on executor: EventLoopExecutor
    ) -> Task<(elapsed: Duration, cancelled: Bool), Never> {
        Task(executorPreference: executor) {
            let start = ContinuousClock.now
            do {
                try await EventLoopClock().sleep(for: duration, tolerance: tolerance)
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

    /// Waits until the loop's wheel holds `count` sleepers (each test's sleepers are the only ones on the suite's loop).
    private static func waitForSleepers(_ count: Int, on executor: EventLoopExecutor) async throws {
        let wheel = SleepWheel.of(executor.eventLoop)
        while try await executor.eventLoop.submit({ wheel.sleeping }).get() < count {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("a cancelled sleep ends at once with CancellationError; the others sleep on and wake", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        try await Self.withLoop { executor in
            // Sleeps that cannot end on their own before the test cancels them, however slow the machine.
            let cancelled = Self.sleep(.seconds(3600), on: executor)
            let woken = Self.sleep(.milliseconds(500), on: executor)
            try await Self.waitForSleepers(2, on: executor)
            cancelled.cancel()
            let (_, wasCancelled) = await cancelled.value
            #expect(wasCancelled)
            let (wokenElapsed, wokenCancelled) = await woken.value
            #expect(!wokenCancelled && wokenElapsed >= .milliseconds(500))

            // A sleeper earlier than every other moves the loop's timer forward, and one cancelled later still ends.
            let long = Self.sleep(.seconds(3600), on: executor)
            try await Self.waitForSleepers(1, on: executor)
            let (shortElapsed, shortCancelled) = await Self.sleep(.milliseconds(150), on: executor).value
            #expect(!shortCancelled && shortElapsed >= .milliseconds(150))
            long.cancel()
            let (_, longCancelled) = await long.value
            #expect(longCancelled)
            #expect(try await executor.eventLoop.submit({ SleepWheel.of(executor.eventLoop).sleeping }).get() == 0)
        }
    }

    @Test("a task cancelled before it sleeps does not sleep, from the clock or in the wheel itself")
    func cancelledBefore() async throws {
        try await Self.withLoop { executor in
            let task = Task(executorPreference: executor) { () -> [Bool] in
                withUnsafeCurrentTask { $0?.cancel() }
                var outcomes: [Bool] = []
                do {
                    try await EventLoopClock().sleep(for: .seconds(3600))
                    outcomes.append(false)
                } catch {
                    outcomes.append(error is CancellationError)
                }
                // Past the clock's own check: the wheel's handler and its check of the task.
                do {
                    try await SleepWheel.of(executor.eventLoop).sleep(slot: .max / 2)
                    outcomes.append(false)
                } catch {
                    outcomes.append(error is CancellationError)
                }
                return outcomes
            }
            #expect(await task.value == [true, true])
        }
    }

    @Test("a loop that shuts down ends the sleeps waiting on it", .timeLimit(.minutes(1)))
    func shutdown() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let executor = EventLoopExecutor(group.next())
        let sleeper = Self.sleep(.seconds(3600), on: executor)
        try await Self.waitForSleepers(1, on: executor)
        try await group.shutdownGracefully()
        let (_, cancelled) = await sleeper.value
        #expect(cancelled)
    }

    @Test("a long sleep ends on a grid of 4, 8 or 16 ms, within its tolerance (a 32nd of it unless given), never before it is due")
    func grids() {
        let slot = UInt64(4_000_000)
        var rng = SystemRandomNumberGenerator()
        // (the sleep, its grid) with the tolerance not given: 100–255 ms on 4 ms, 256–511 ms on 8 ms, 512 ms and
        // longer on 16 ms.
        let cases: [(Duration, UInt64)] = [
            (.milliseconds(100), 1), (.milliseconds(200), 1), (.milliseconds(255), 1), (.milliseconds(256), 2),
            (.milliseconds(500), 2), (.milliseconds(512), 4), (.milliseconds(990), 4), (.seconds(60), 4),
        ]
        for (delay, slotsPerGrid) in cases {
            let tolerance = EventLoopClock.defaultTolerance(for: delay)
            for _ in 0..<100 {
                let due = UInt64.random(in: 0...(1 << 50), using: &rng)
                let wheelSlot = EventLoopClock.wheelSlot(due: due, tolerance: tolerance)
                let ends = wheelSlot * slot
                #expect(wheelSlot % slotsPerGrid == 0, "a sleep of \(delay) ends in slot \(wheelSlot)")
                #expect(ends > due && ends - due <= slotsPerGrid * slot, "a sleep of \(delay) due at \(due) ends at \(ends)")
            }
        }
        // A tolerance given: the coarsest grid within it, 16 ms at most.
        #expect(EventLoopClock.wheelSlot(due: 1, tolerance: .milliseconds(4)) == 1)
        #expect(EventLoopClock.wheelSlot(due: 1, tolerance: .milliseconds(12)) == 2)
        #expect(EventLoopClock.wheelSlot(due: 1, tolerance: .seconds(1)) == 4)
        // Due exactly on a grid line: the next one (a sleep ends after it is due, at most one grid late).
        #expect(EventLoopClock.wheelSlot(due: 16 * slot, tolerance: .milliseconds(16)) == 20)
        #expect(EventLoopClock.wheelSlot(due: 16 * slot, tolerance: .milliseconds(4)) == 17)
    }

    @Test("a long sleep given a tolerance under a slot is a timer of its own and ends when asked; without one it waits in the wheel", .timeLimit(.minutes(1)))
    func exactSleep() async throws {
        try await Self.withLoop { executor in
            let first = Self.sleep(.seconds(3600), on: executor)
            try await Self.waitForSleepers(1, on: executor)
            let exact = Self.sleep(.seconds(3600), tolerance: .zero, on: executor)
            let second = Self.sleep(.seconds(3600), on: executor)
            try await Self.waitForSleepers(2, on: executor)
            // The loop runs its jobs in order: the exact sleep began before the second, and is not in the wheel.
            #expect(try await executor.eventLoop.submit({ SleepWheel.of(executor.eventLoop).sleeping }).get() == 2)
            for task in [first, exact, second] { task.cancel() }
            for task in [first, exact, second] { #expect(await task.value.cancelled) }
            let (elapsed, cancelled) = await Self.sleep(.milliseconds(150), tolerance: .zero, on: executor).value
            #expect(!cancelled && elapsed >= .milliseconds(150))
        }
    }

    /// Runs an action after `delay` through `EventLoopClock.run(after:on:_:)`, called on the loop or, with `offLoop`,
    /// from this task; returns how long it took and whether it ran on the loop.
    private static func runAction(
        after delay: Duration, on executor: EventLoopExecutor, offLoop: Bool = false
    ) async throws -> (elapsed: Duration, onLoop: Bool) {
        let loop = executor.eventLoop
        let start = ContinuousClock.now
        let promise = loop.makePromise(of: (elapsed: Duration, onLoop: Bool).self)
        let schedule: @Sendable () -> Void = { EventLoopClock().run(after: delay, on: loop) { promise.succeed((ContinuousClock.now - start, loop.inEventLoop)) } }
        if offLoop { schedule() } else { loop.execute(schedule) }
        return try await promise.futureResult.get()
    }

    @Test("an action waits on the loop as a sleep would, never running early: in the wheel, as a timer, at once", .timeLimit(.minutes(1)))
    func actions() async throws {
        try await Self.withLoop { executor in
            // Long (in the wheel), short (a timer of its own), nothing to wait; from the loop and from off it.
            for delay in [Duration.milliseconds(300), .milliseconds(120), .milliseconds(20), .zero] {
                for offLoop in [false, true] {
                    let (elapsed, onLoop) = try await Self.runAction(after: delay, on: executor, offLoop: offLoop)
                    #expect(onLoop)
                    #expect(elapsed >= delay, "an action after \(delay) ran after \(elapsed)")
                }
            }
        }
    }

    /// On a loop of its own: the suite's loop must hold no waits between tests.
    @Test("a long action waits in the wheel; a loop that shuts down drops it, and still ends its sleeps", .timeLimit(.minutes(1)))
    func shutdownDropsActions() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let executor = EventLoopExecutor(group.next())
        let ran = ManagedAtomicFlag()
        try await executor.eventLoop.submit {
            EventLoopClock().run(after: .seconds(3600), on: executor.eventLoop) { ran.set() }
        }.get()
        // The action is an entry of the wheel (no timer of its own), counted with the sleepers.
        try await Self.waitForSleepers(1, on: executor)
        let sleeper = Self.sleep(.seconds(3600), on: executor)
        try await Self.waitForSleepers(2, on: executor)
        try await group.shutdownGracefully()
        #expect(await sleeper.value.cancelled)
        #expect(!ran.isSet)
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

/// A flag an action sets from the loop, read by the test.
private final class ManagedAtomicFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
