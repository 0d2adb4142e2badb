import Foundation
import MatchcastCore
import MatchcastFeeds
import Testing

@Suite("ConditionalRequestState")
struct ConditionalRequestStateTests {
    @Test func addsNothingBeforeAnyResponse() {
        #expect(ConditionalRequestState().apply(to: .match("m1")) == .match("m1"))
    }

    @Test func sendsBackTheValidatorsOfA200() {
        var state = ConditionalRequestState()
        state.record(FeedResponse(status: 200, headers: ["etag": "\"v7\"", "last-modified": "Tue, 21 Apr 2026 15:12:09 GMT"]))
        let request = state.apply(to: FeedRequest(path: "/live-matches", headers: ["x-trace": "1"]))
        #expect(request.path == "/live-matches")
        #expect(request.headers == ["x-trace": "1", "if-none-match": "\"v7\"", "if-modified-since": "Tue, 21 Apr 2026 15:12:09 GMT"])
    }

    @Test func a200WithoutAValidatorForgetsTheOldOne() {
        var state = ConditionalRequestState(etag: "\"v1\"", lastModified: "Mon, 20 Apr 2026 10:00:00 GMT")
        state.record(FeedResponse(status: 200, headers: ["etag": "\"v2\""]))
        #expect(state.etag == "\"v2\"")
        #expect(state.lastModified == nil)
        #expect(state.apply(to: .liveMatches).headers == ["if-none-match": "\"v2\""])
    }

    @Test func a304UpdatesOnlyTheValidatorsItCarries() {
        var state = ConditionalRequestState(etag: "\"v1\"", lastModified: "Mon, 20 Apr 2026 10:00:00 GMT")
        state.record(FeedResponse(status: 304, headers: ["etag": "\"v1b\""]))
        #expect(state.etag == "\"v1b\"")
        #expect(state.lastModified == "Mon, 20 Apr 2026 10:00:00 GMT")
        state.record(FeedResponse(status: 304))
        #expect(state.etag == "\"v1b\"")
    }

    @Test(arguments: [404, 429, 500, 503])
    func errorsChangeNothing(status: Int) {
        var state = ConditionalRequestState(etag: "\"v1\"")
        state.record(FeedResponse(status: status, headers: ["etag": "\"oops\""]))
        #expect(state.etag == "\"v1\"")
    }

    @Test func blankValidatorsAreIgnoredAndResetForgetsAll() {
        var state = ConditionalRequestState()
        state.record(FeedResponse(status: 200, headers: ["etag": "  ", "last-modified": "Mon, 20 Apr 2026 10:00:00 GMT"]))
        #expect(state.etag == nil)
        state.reset()
        #expect(state == ConditionalRequestState())
    }

    @Test func aMatchPollSendsValidatorsOnlyAfterABodyThatDecoded() {
        var poll = MatchPollState(matchId: "m1", policy: Fixtures.policy)
        var rng = SeededGenerator(seed: 1)
        _ = poll.ingest(
            FeedResponse(status: 200, headers: ["etag": "\"bad\""], body: Fixtures.matchBody(Fixtures.malformed(id: "m1"))),
            now: Fixtures.now, using: &rng)
        #expect(poll.nextRequest.headers["if-none-match"] == nil)

        _ = poll.ingest(
            Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: "m1", seq: 1)), headers: ["etag": "\"good\""]),
            now: Fixtures.now, using: &rng)
        #expect(poll.nextRequest == FeedRequest(path: "/matches/m1", headers: ["if-none-match": "\"good\""]))
        #expect(poll.prepare(FeedRequest(path: "/custom")).headers == ["if-none-match": "\"good\""])
    }
}
