import Foundation
import MatchcastFeeds
@testable import MatchcastService
import MatchcastTesting
import NIOPosix
import Synchronization
import Testing

/// The parts that let a polled match wait between its polls with no task of its own: `PollRuns` (each poll a task that
/// lives for that poll, cancelled and waited for at the supervisor's end) and `SleepingPollTimer` (the waits on a clock
/// other than serve's, as the story tests run them).
@Suite("poll runs and the poll timer: a match holds no task between its polls")
struct PollRunsTests {
    private static let executor = EventLoopExecutor(MultiThreadedEventLoopGroup.singleton.next())

    /// Ends its waits one by one, counting how each ended.
    private final class Outcomes: Sendable {
        private let state = Mutex<(cancelled: Int, finished: Int, started: Int)>((0, 0, 0))
        func started() { state.withLock { $0.started += 1 } }
        func ended(cancelled: Bool) { state.withLock { cancelled ? ($0.cancelled += 1) : ($0.finished += 1) } }
        var counts: (cancelled: Int, finished: Int, started: Int) { state.withLock { $0 } }
    }

    @Test("stop cancels the polls running, returns once they have ended, and nothing starts after it", .timeLimit(.minutes(1)))
    func stopCancelsAndWaits() async throws {
        let runs = PollRuns()
        let outcomes = Outcomes()
        for _ in 0..<3 {
            #expect(runs.start(on: Self.executor) {
                outcomes.started()
                let cancelled = (try? await Task.sleep(for: .seconds(3600))) == nil
                // Ends a little after its cancellation: `stop` must wait for it.
                try? await ContinuousClock().sleep(for: .milliseconds(50))
                outcomes.ended(cancelled: cancelled)
            })
        }
        #expect(runs.start(on: Self.executor) { outcomes.ended(cancelled: false) })
        while outcomes.counts.started < 3 || outcomes.counts.finished < 1 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(runs.count == 3)
        await runs.stop()
        #expect(outcomes.counts.cancelled == 3)
        #expect(runs.count == 0 && runs.isStopped)
        #expect(!runs.start(on: Self.executor) { outcomes.started() })
        try await Task.sleep(for: .milliseconds(50))
        #expect(outcomes.counts.started == 3)
    }

    @Test("thousands of polls that end at once leave nothing behind, and stop then returns at once", .timeLimit(.minutes(1)))
    func quickPolls() async throws {
        let runs = PollRuns()
        let outcomes = Outcomes()
        for _ in 0..<5_000 { _ = runs.start(on: Self.executor) { outcomes.ended(cancelled: Task.isCancelled) } }
        while runs.count > 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(outcomes.counts.finished == 5_000)
        await runs.stop()
        #expect(runs.count == 0)
    }

    @Test("a wait on a manual clock runs its action when the clock gets there, never before; stop drops the others", .timeLimit(.minutes(1)))
    func sleepingTimer() async throws {
        let clock = ManualClock()
        let timer = SleepingPollTimer(clock: clock)
        let ran = Mutex<[String]>([])
        timer.schedule(after: .seconds(5), on: Self.executor) { ran.withLock { $0.append("5 s") } }
        timer.schedule(after: .seconds(10), on: Self.executor) { ran.withLock { $0.append("10 s") } }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(4))
        #expect(ran.withLock { $0 }.isEmpty)
        clock.advance(by: .seconds(1))
        while ran.withLock({ $0 }).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(ran.withLock { $0 } == ["5 s"])
        // `stop` returns once the cancelled wait has left the clock; an action scheduled after it never waits.
        await timer.stop()
        #expect(clock.sleeperCount == 0)
        timer.schedule(after: .seconds(1), on: Self.executor) { ran.withLock { $0.append("after stop") } }
        clock.advance(by: .seconds(10))
        try await Task.sleep(for: .milliseconds(50))
        #expect(ran.withLock { $0 } == ["5 s"])
        #expect(clock.sleeperCount == 0)
    }
}
