import Foundation
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Testing

@Suite("Poller")
struct PollerTests {
    private func body(seq: Int, status: String = "live", retryAfterMs: Int) -> FeedResponse {
        Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: "m1", seq: seq, status: status), retryAfterMs: retryAfterMs))
    }

    @Test func pollsAtTheFeedsIntervalUntilTheMatchIsFinal() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([
            .response(body(seq: 1, retryAfterMs: 5_000)),
            .response(FeedResponse(status: 503, headers: ["retry-after": "8"])),
            .response(body(seq: 2, retryAfterMs: 3_000)),
            .response(body(seq: 3, status: "completed", retryAfterMs: 3_000)),
        ])
        let source = MatchSource(matchId: "m1", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
        let collected = Collected<PollResult<MatchPollOutcome>>()
        let poller = Poller(source: source, clock: clock) { collected.append($0) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await poller.run() }

            await clock.waitForSleepers(count: 1)
            #expect(collected.all.map(\.delay) == [.seconds(5)])
            #expect(clock.nextDeadline == .init(offset: .seconds(5)))

            clock.advance(by: .seconds(5))
            await clock.waitForSleepers(count: 1)
            #expect(collected.all.count == 2)
            #expect(clock.nextDeadline == .init(offset: .seconds(13)))

            // Not yet: nothing is polled before the deadline.
            clock.advance(by: .seconds(7))
            #expect(clock.sleeperCount == 1)
            #expect(transport.requests.count == 2)

            clock.advance(by: .seconds(1))
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(3))
            try await group.next()  // run() returns by itself after the final snapshot
        }

        let outcomes = collected.all.map(\.outcome)
        #expect(outcomes.count == 4)
        #expect(outcomes[1] == .failed(.status(503, path: "/matches/m1")))
        guard case .updated(let last) = outcomes.last else {
            Issue.record("expected the final snapshot last")
            return
        }
        #expect(last.status == .completed)
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellationEndsTheLoopWhileItSleeps() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.response(body(seq: 1, retryAfterMs: 60_000))])
        let source = MatchSource(matchId: "m1", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
        let collected = Collected<PollResult<MatchPollOutcome>>()
        let poller = Poller(source: source, clock: clock) { collected.append($0) }

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await poller.run() }
            await clock.waitForSleepers(count: 1)
            group.cancelAll()
            await group.next()
        }
        #expect(collected.all.count == 1)
        #expect(transport.requests.count == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aSourceThatIsAlreadyDoneIsNotPolled() async throws {
        let transport = ScriptedTransport([.response(body(seq: 1, status: "completed", retryAfterMs: 1_000))])
        let source = MatchSource(matchId: "m1", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        _ = try await source.refresh()
        let collected = Collected<PollResult<MatchPollOutcome>>()
        await Poller(source: source, clock: ManualClock()) { collected.append($0) }.run()
        #expect(collected.all.isEmpty)
        #expect(transport.requests.count == 1)
    }

    @Test func theLiveListKeepsPollingThroughFailures() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(handler: { _ in .response(FeedResponse(status: 500)) })
        let source = LiveListSource(transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
        let collected = Collected<PollResult<LiveListPollOutcome>>()
        let poller = Poller(source: source, clock: clock) { collected.append($0) }

        await withTaskGroup(of: Void.self) { group in
            group.addTask { await poller.run() }
            for _ in 0..<5 {
                await clock.waitForSleepers(count: 1)
                clock.advance(by: .seconds(64))
            }
            await clock.waitForSleepers(count: 1)
            group.cancelAll()
        }
        let delays = collected.all.map(\.delay)
        #expect(delays.count == 6)
        #expect(try #require(delays.last) >= .seconds(32))
        #expect(collected.all.allSatisfy { $0.outcome == .failed(.status(500, path: "/live-matches")) })
    }
}
