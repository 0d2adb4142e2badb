import Foundation
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Testing

@Suite("MatchSource")
struct MatchSourceTests {
    private func body(seq: Int, status: String = "live", retryAfterMs: Int? = 5_000) -> Data {
        Fixtures.matchBody(Fixtures.snapshot(id: "m1", seq: seq, status: status), retryAfterMs: retryAfterMs)
    }

    @Test func loadIsCacheFirstUntilTheNextPollIsDue() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([
            .response(Fixtures.ok(body(seq: 1), headers: ["etag": "\"v1\""])),
            .response(FeedResponse(status: 304)),
        ])
        let source = MatchSource(matchId: "m1", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
        #expect(await source.nextPollDelay() == .zero)

        let first = try await source.load()
        #expect(first.seq == 1)
        #expect(await source.nextPollDelay() == .seconds(5))

        clock.advance(by: .seconds(3))
        #expect(try await source.load() == first)
        #expect(transport.requests.count == 1)
        #expect(await source.nextPollDelay() == .seconds(2))

        clock.advance(by: .seconds(2))
        #expect(try await source.load() == first)
        #expect(transport.requests.map(\.headers) == [[:], ["if-none-match": "\"v1\""]])
    }

    @Test func refreshAlwaysFetchesAndReturnsTheCacheForStaleAnswers() async throws {
        let transport = ScriptedTransport([
            .response(Fixtures.ok(body(seq: 5))),
            .response(Fixtures.ok(body(seq: 4))),
        ])
        let source = MatchSource(matchId: "m1", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        _ = try await source.refresh()
        let afterStale = try await source.refresh()
        #expect(afterStale.seq == 5)
        #expect(transport.requests.count == 2)
    }

    @Test func failuresThrowFeedErrorsAndBackOff() async throws {
        struct Refused: Error {}
        let transport = ScriptedTransport([
            .failure(Refused()),
            .response(FeedResponse(status: 503, headers: ["retry-after": "7"])),
            .response(Fixtures.ok(Data("{}".utf8))),
        ])
        let source = MatchSource(matchId: "m1", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })

        let transportError = await #expect(throws: FeedError.self) { try await source.refresh() }
        #expect(transportError?.reason == "transport")
        #expect(transportError?.path == "/matches/m1")
        #expect(await source.consecutiveFailures == 1)

        await #expect(throws: FeedError.status(503, path: "/matches/m1")) { try await source.refresh() }
        #expect(await source.nextPollDelay() == .seconds(7))

        let decodeError = await #expect(throws: FeedError.self) { try await source.refresh() }
        #expect(decodeError?.reason == "decode")
        #expect(await source.consecutiveFailures == 3)
        #expect(await source.snapshot == nil)
    }

    @Test func pollingStopsOnceTheMatchIsFinal() async throws {
        let transport = ScriptedTransport([.response(Fixtures.ok(body(seq: 1))), .response(Fixtures.ok(body(seq: 2, status: "completed")))])
        let source = MatchSource(matchId: "m1", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        _ = try await source.refresh()
        #expect(await source.shouldPoll())
        _ = try await source.refresh()
        #expect(await source.shouldPoll() == false)
    }

    @Test func liveListSourceServesTheListCacheFirst() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([
            .response(Fixtures.ok(Fixtures.listBody([Fixtures.snapshot(id: "m1", seq: 1), Fixtures.malformed(id: "m2")], retryAfterMs: 4_000))),
            .response(FeedResponse(status: 500)),
        ])
        let source = LiveListSource(transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
        #expect(try await source.load().map(\.id) == ["m1"])
        #expect(try await source.load().map(\.id) == ["m1"])
        #expect(transport.requests.count == 1)
        #expect(await source.shouldPoll())

        clock.advance(by: .seconds(4))
        await #expect(throws: FeedError.status(500, path: "/live-matches")) { try await source.load() }
        #expect(await source.matches.map(\.id) == ["m1"])
    }
}
