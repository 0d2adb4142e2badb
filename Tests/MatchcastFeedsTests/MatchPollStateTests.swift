import Foundation
import MatchcastCore
import MatchcastFeeds
import Testing

/// A `MatchPollState` for "m1" with its generator, fed at a fixed time.
private struct Step {
    var state = MatchPollState(matchId: "m1", policy: Fixtures.policy)
    var rng = SeededGenerator(seed: 7)

    mutating func ingest(_ response: FeedResponse) -> PollResult<MatchPollOutcome> {
        state.ingest(response, now: Fixtures.now, using: &rng)
    }

    mutating func ingest(seq: Int?, status: String = "live", home: Int = 0, retryAfterMs: Int? = nil) -> PollResult<MatchPollOutcome> {
        ingest(Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: "m1", seq: seq, status: status, home: home), retryAfterMs: retryAfterMs)))
    }
}

@Suite("MatchPollState")
struct MatchPollStateTests {

    @Test func firstSnapshotIsAnUpdateTimedByTheBody() throws {
        var step = Step()
        let result = step.ingest(seq: 5, retryAfterMs: 5_000)
        guard case .updated(let snapshot) = result.outcome else {
            Issue.record("expected an update, got \(result.outcome)")
            return
        }
        #expect(snapshot.seq == 5)
        #expect(result.delay == .seconds(5))
        #expect(step.state.snapshot == snapshot)
    }

    @Test func lowerSeqIsStaleAndIgnored() {
        var step = Step()
        _ = step.ingest(seq: 5, home: 2)
        let result = step.ingest(seq: 3, home: 1)
        #expect(result.outcome == .stale(seq: 3))
        #expect(step.state.snapshot?.seq == 5)
        #expect(step.state.consecutiveFailures == 0)
        #expect(result.delay == .seconds(10))
    }

    @Test func higherSeqReplacesAndEqualSnapshotIsUnchanged() {
        var step = Step()
        _ = step.ingest(seq: 5)
        guard case .updated(let newer) = step.ingest(seq: 6, home: 1).outcome else {
            Issue.record("expected an update")
            return
        }
        #expect(newer.seq == 6)
        #expect(step.ingest(seq: 6, home: 1).outcome == .unchanged)
    }

    @Test func snapshotsWithoutSeqAreAlwaysAccepted() {
        var step = Step()
        _ = step.ingest(seq: 5, home: 1)
        guard case .updated(let snapshot) = step.ingest(seq: nil, home: 2).outcome else {
            Issue.record("expected an update")
            return
        }
        #expect(snapshot.seq == nil)
    }

    @Test func notModifiedKeepsTheCacheAndTheLastInterval() {
        var step = Step()
        _ = step.ingest(seq: 5, retryAfterMs: 7_000)
        let cached = step.state.snapshot
        let result = step.ingest(FeedResponse(status: 304))
        #expect(result.outcome == .unchanged)
        #expect(result.delay == .seconds(7))
        #expect(step.state.snapshot == cached)
    }

    @Test func notModifiedUsesItsOwnHeadersWhenPresent() {
        var step = Step()
        _ = step.ingest(seq: 5, retryAfterMs: 7_000)
        #expect(step.ingest(FeedResponse(status: 304, headers: ["cache-control": "max-age=20"])).delay == .seconds(20))
        // ...and remembers them for the next bare 304.
        #expect(step.ingest(FeedResponse(status: 304)).delay == .seconds(20))
    }

    @Test func notModifiedResetsTheBackoff() {
        var step = Step()
        _ = step.ingest(seq: 5)
        _ = step.ingest(FeedResponse(status: 500))
        #expect(step.state.consecutiveFailures == 1)
        _ = step.ingest(FeedResponse(status: 304))
        #expect(step.state.consecutiveFailures == 0)
    }

    @Test func notModifiedWithNothingCachedIsAFailure() {
        var step = Step()
        let result = step.ingest(FeedResponse(status: 304))
        #expect(result.outcome == .failed(.status(304, path: "/matches/m1")))
    }

    @Test func unavailableHonoursRetryAfter() {
        var step = Step()
        let result = step.ingest(FeedResponse(status: 503, headers: ["retry-after": "7"]))
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.reason == "status")
        #expect(error.status == 503)
        #expect(error.description == "HTTP 503 from /matches/m1")
        #expect(result.delay == .seconds(7))
        #expect(step.state.consecutiveFailures == 1)
    }

    @Test func rateLimitedHonoursABodyRetryAfterMs() {
        var step = Step()
        let result = step.ingest(FeedResponse(status: 429, headers: ["retry-after": "30"], body: Data(#"{"retryAfterMs": 12000}"#.utf8)))
        #expect(result.delay == .seconds(12))
    }

    @Test func unavailableWithoutAHintBacksOff() {
        var step = Step()
        let result = step.ingest(FeedResponse(status: 503, headers: ["cache-control": "max-age=1"], body: Data("<html>".utf8)))
        #expect(result.delay >= .seconds(2) && result.delay <= .seconds(4))
    }

    @Test func errorsBackOffExponentiallyAndSuccessResets() {
        var step = Step()
        var delays: [Duration] = []
        for _ in 0..<6 {
            delays.append(step.ingest(FeedResponse(status: 500)).delay)
        }
        #expect(step.state.consecutiveFailures == 6)
        let steps: [Duration] = [.seconds(4), .seconds(8), .seconds(16), .seconds(32), .seconds(64), .seconds(64)]
        for (delay, step) in zip(delays, steps) {
            #expect(delay >= step / 2 && delay <= step)
        }
        _ = step.ingest(seq: 1)
        #expect(step.state.consecutiveFailures == 0)
        let next = step.ingest(FeedResponse(status: 500)).delay
        #expect(next <= .seconds(4))
    }

    @Test func transportFailuresBackOffAndKeepTheCache() {
        var step = Step()
        _ = step.ingest(seq: 5)
        let result = step.state.ingest(failure: .timeout(path: step.state.path), now: Fixtures.now, using: &step.rng)
        #expect(result.outcome == .failed(.timeout(path: "/matches/m1")))
        #expect(step.state.snapshot?.seq == 5)
        #expect(step.state.consecutiveFailures == 1)
    }

    @Test func malformedBodyIsADecodeErrorNamingTheField() {
        var step = Step()
        let result = step.ingest(Fixtures.ok(Fixtures.matchBody(Fixtures.malformed(id: "m1"))))
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.reason == "decode")
        #expect(error.inputError?.field == "match.score.home")
        #expect(error.description == "decoding /matches/m1: field 'match.score.home': expected a number")
    }

    @Test(arguments: [Data(), Data("not json".utf8), Data(#"{"retryAfterMs": 5000}"#.utf8)])
    func unusableBodiesAreDecodeErrors(body: Data) {
        var state = MatchPollState(matchId: "m1", policy: Fixtures.policy)
        var rng = SeededGenerator(seed: 1)
        guard case .failed(let error) = state.ingest(Fixtures.ok(body), now: Fixtures.now, using: &rng).outcome else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.reason == "decode")
    }

    @Test func aSnapshotOfAnotherMatchIsRejected() {
        var step = Step()
        let result = step.ingest(Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: "m2", seq: 1))))
        #expect(result.outcome == .failed(.decode(InputError(field: "match.id", reason: "expected 'm1', got 'm2'"), path: "/matches/m1")))
        #expect(step.state.snapshot == nil)
    }

    @Test func finalStatusEndsPolling() {
        var step = Step()
        _ = step.ingest(seq: 1)
        #expect(!step.state.isFinal)
        _ = step.ingest(seq: 2, status: "completed")
        #expect(step.state.isFinal)
    }

    @Test func sameInputsGiveTheSameResults() {
        func run() -> [PollResult<MatchPollOutcome>] {
            var state = MatchPollState(matchId: "m1", policy: PollTimingPolicy(jitter: 0.2))
            var rng = SeededGenerator(seed: 99)
            let responses = [
                Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: "m1", seq: 1), retryAfterMs: 5_000)),
                FeedResponse(status: 304), FeedResponse(status: 500), FeedResponse(status: 503, headers: ["retry-after": "9"]),
            ]
            return responses.map { state.ingest($0, now: Fixtures.now, using: &rng) }
        }
        #expect(run() == run())
    }
}
