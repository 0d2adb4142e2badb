import MatchcastTesting
import Testing

@Suite("ManualClock")
struct ManualClockTests {
    @Test func instantsMeasureDurationsForward() {
        let a = ManualClock.Instant(offset: .seconds(2))
        let b = a.advanced(by: .seconds(3))
        #expect(a.duration(to: b) == .seconds(3))
        #expect(b.duration(to: a) == .seconds(-3))
        #expect(a < b)
    }

    @Test func aSleeperWakesOnlyOnceTimeReachesItsDeadline() async throws {
        let clock = ManualClock()
        let woke = Collected<Bool>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await clock.sleep(for: .seconds(5))
                woke.append(true)
            }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(4))
            #expect(clock.sleeperCount == 1)
            #expect(woke.all.isEmpty)
            clock.advance(to: .init(offset: .seconds(5)))
            try await group.next()
            #expect(woke.all == [true])
        }
        #expect(clock.now == .init(offset: .seconds(5)))
    }

    @Test func sleepersWakeInDeadlineOrder() async throws {
        let clock = ManualClock()
        let order = Collected<Int>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for seconds in [3, 1, 2] {
                group.addTask {
                    try await clock.sleep(until: .init(offset: .seconds(seconds)), tolerance: nil)
                    order.append(seconds)
                }
                // One at a time, so each is parked before the next starts.
                await clock.waitForSleepers(count: 1 + [3, 1, 2].firstIndex(of: seconds)!)
            }
            for step in 1...3 {
                clock.advance(by: .seconds(1))
                try await group.next()
                #expect(order.all.count == step)
            }
        }
        #expect(order.all == [1, 2, 3])
    }

    @Test func aDeadlineAlreadyPastReturnsAtOnce() async throws {
        let clock = ManualClock(now: .init(offset: .seconds(10)))
        try await clock.sleep(until: .init(offset: .seconds(10)), tolerance: nil)
        try await clock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aCancelledSleeperThrows() async throws {
        let clock = ManualClock()
        await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask {
                do {
                    try await clock.sleep(for: .seconds(60))
                    return nil
                } catch {
                    return error
                }
            }
            await clock.waitForSleepers(count: 1)
            group.cancelAll()
            let error = await group.next() ?? nil
            #expect(error is CancellationError)
        }
        #expect(clock.sleeperCount == 0)
    }

    @Test func sleepingInACancelledTaskThrowsWithoutParking() async {
        let clock = ManualClock()
        await #expect(throws: CancellationError.self) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    withUnsafeCurrentTask { $0?.cancel() }
                    try await clock.sleep(for: .seconds(1))
                }
                try await group.next()
            }
        }
        #expect(clock.sleeperCount == 0)
    }

    @Test func waitForSleepersReturnsAtOnceWhenEnoughAreParked() async {
        let clock = ManualClock()
        await clock.waitForSleepers(count: 0)
        #expect(clock.nextDeadline == nil)
    }

    @Test func aBoundedWaitForSleepersGivesUpAfterItsLimit() async {
        let clock = ManualClock()
        #expect(await clock.waitForSleepers(count: 1, atMost: .milliseconds(20)) == false)
        #expect(await clock.waitForSleepers(count: 0, atMost: .seconds(60)) == true)
    }

    @Test func idlenessWaitsForAsManySleepersAsItSawAndLowersTheNumberWhenALoopEnds() async throws {
        let clock = ManualClock()
        let idleness = ClockIdleness(clock: clock, floor: 2, patience: .milliseconds(50))
        try await withThrowingTaskGroup(of: Void.self) { group in
            let returned = Collected<Int>()
            group.addTask {
                await idleness.wait()
                returned.append(clock.sleeperCount)
            }
            group.addTask { try await clock.sleep(for: .seconds(1)) }
            await clock.waitForSleepers(count: 1)
            #expect(returned.all.isEmpty, "one of the two loops is still at work")
            group.addTask { try await clock.sleep(for: .seconds(2)) }
            await clock.waitForSleepers(count: 2)
            try await group.next()
            #expect(returned.all == [2])
            // One loop ends for good: after the patience the wait settles for the one left.
            clock.advance(by: .seconds(1))
            try await group.next()
            let began = ContinuousClock.now
            await idleness.wait()
            #expect(ContinuousClock.now - began >= .milliseconds(50))
            await idleness.wait()
            #expect(clock.sleeperCount == 1)
            clock.advance(by: .seconds(1))
            try await group.next()
        }
    }
}
