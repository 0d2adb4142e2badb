import Foundation
import MatchcastCore
import MatchcastFeeds
import Testing

/// A `LiveListPollState` with its generator, fed at a fixed time.
private struct ListStep {
    var state = LiveListPollState(policy: Fixtures.policy)
    var rng = SeededGenerator(seed: 3)

    mutating func ingest(_ response: FeedResponse) -> PollResult<LiveListPollOutcome> {
        state.ingest(response, now: Fixtures.now, using: &rng)
    }

    mutating func ingest(_ entries: [String], retryAfterMs: Int? = nil) -> PollResult<LiveListPollOutcome> {
        ingest(Fixtures.ok(Fixtures.listBody(entries, retryAfterMs: retryAfterMs)))
    }

    /// The update of a decoded list, or nil (recorded as an issue) for any other outcome.
    mutating func update(_ entries: [String], sourceLocation: SourceLocation = #_sourceLocation) -> LiveListUpdate? {
        let outcome = ingest(entries).outcome
        guard case .updated(let update) = outcome else {
            Issue.record("expected an update, got \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        return update
    }
}

@Suite("LiveListPollState")
struct LiveListPollStateTests {
    @Test func aBadEntryIsReportedAndTheGoodOnesKept() throws {
        var step = ListStep()
        let received = step.update([Fixtures.snapshot(id: "m1", seq: 1), Fixtures.malformed(id: "bad"), Fixtures.snapshot(id: "m2", seq: 4)])
        let update = try #require(received)
        #expect(update.matches.map(\.id) == ["m1", "m2"])
        #expect(update.changed.map(\.id) == ["m1", "m2"])
        let failure = try #require(update.failures.first)
        #expect(update.failures.count == 1)
        #expect(failure.matchId == "bad")
        #expect(failure.error.field == "matches[1].score.home")
        #expect(step.state.matches.map(\.id) == ["m1", "m2"])
    }

    @Test func anEntryThatTurnsBadKeepsItsLastGoodSnapshot() throws {
        var step = ListStep()
        _ = step.update([Fixtures.snapshot(id: "m1", seq: 1), Fixtures.snapshot(id: "m2", seq: 1)])
        let received = step.update([Fixtures.malformed(id: "m1"), Fixtures.snapshot(id: "m2", seq: 2)])
        let update = try #require(received)
        #expect(update.matches.map(\.id) == ["m2", "m1"])
        #expect(update.matches.last?.seq == 1)
        #expect(update.changed.map(\.id) == ["m2"])
        #expect(update.removed.isEmpty)
        #expect(update.failures.map(\.matchId) == ["m1"])
    }

    @Test func theSeqGuardWorksPerMatch() throws {
        var step = ListStep()
        _ = step.update([Fixtures.snapshot(id: "m1", seq: 10, home: 3), Fixtures.snapshot(id: "m2", seq: 4)])
        let received = step.update([Fixtures.snapshot(id: "m1", seq: 9, home: 2), Fixtures.snapshot(id: "m2", seq: 5, home: 1)])
        let update = try #require(received)
        #expect(update.stale == [StaleSnapshot(matchId: "m1", seq: 9, heldSeq: 10)])
        #expect(update.changed.map(\.id) == ["m2"])
        let m1 = try #require(update.matches.first { $0.id == "m1" })
        #expect(m1.seq == 10)
        #expect(step.state.matches.map(\.seq) == [10, 5])
    }

    @Test func matchesThatLeaveTheListAreRemoved() throws {
        var step = ListStep()
        _ = step.update([Fixtures.snapshot(id: "m1", seq: 1), Fixtures.snapshot(id: "m2", seq: 1)])
        let received = step.update([Fixtures.snapshot(id: "m2", seq: 1), Fixtures.snapshot(id: "m3", seq: 1)])
        let update = try #require(received)
        #expect(update.removed == ["m1"])
        #expect(update.changed.map(\.id) == ["m3"])
    }

    @Test func aRepeatedIdKeepsTheNewerEntry() throws {
        var step = ListStep()
        let received = step.update([Fixtures.snapshot(id: "m1", seq: 2, home: 1), Fixtures.snapshot(id: "m1", seq: 3, home: 2)])
        let update = try #require(received)
        #expect(update.matches.count == 1)
        #expect(update.matches.first?.seq == 3)
    }

    @Test func theSameListIsUnchangedButTheFirstEmptyListIsNews() {
        var step = ListStep()
        #expect(step.ingest([]).outcome == .updated(LiveListUpdate(matches: [])))
        #expect(step.state.hasList)
        #expect(step.ingest([]).outcome == .unchanged)
        _ = step.ingest([Fixtures.snapshot(id: "m1", seq: 1)])
        #expect(step.ingest([Fixtures.snapshot(id: "m1", seq: 1)]).outcome == .unchanged)
    }

    @Test func notModifiedKeepsTheListAndTheInterval() {
        var step = ListStep()
        _ = step.ingest([Fixtures.snapshot(id: "m1", seq: 1)], retryAfterMs: 3_000)
        let result = step.ingest(FeedResponse(status: 304))
        #expect(result.outcome == .unchanged)
        #expect(result.delay == .seconds(3))
        #expect(step.state.matches.map(\.id) == ["m1"])
    }

    @Test func aBrokenEnvelopeFailsTheWholeListButKeepsTheCache() {
        var step = ListStep()
        _ = step.ingest([Fixtures.snapshot(id: "m1", seq: 1)])
        let result = step.ingest(Fixtures.ok(Data(#"{"matches": {"oops": 1}}"#.utf8)))
        guard case .failed(let error) = result.outcome else {
            Issue.record("expected a failure, got \(result.outcome)")
            return
        }
        #expect(error.reason == "decode")
        #expect(error.description.hasPrefix("decoding /live-matches: field 'matches'"))
        #expect(step.state.matches.map(\.id) == ["m1"])
        #expect(step.state.consecutiveFailures == 1)
    }

    @Test func errorsAndConditionalHeaders() {
        var step = ListStep()
        _ = step.ingest(Fixtures.ok(Fixtures.listBody([]), headers: ["etag": "W/\"l1\""]))
        #expect(step.state.nextRequest == FeedRequest(path: "/live-matches", headers: ["if-none-match": "W/\"l1\""]))
        let result = step.ingest(FeedResponse(status: 429, headers: ["retry-after": "15"]))
        #expect(result.outcome == .failed(.status(429, path: "/live-matches")))
        #expect(result.delay == .seconds(15))
    }
}
