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

    @Test("a validator is sent without the spaces and tabs around it; one of only those is none", arguments: [
        (" \t\"v2\" \t", "\"v2\""), ("\"v2\"", "\"v2\""), ("W/\"a b\"", "W/\"a b\""), ("\t", nil), ("", nil),
    ] as [(String, String?)])
    func validatorsAreTrimmed(header: String, kept: String?) {
        var state = ConditionalRequestState()
        state.record(FeedResponse(status: 200, headers: ["etag": header, "last-modified": " \(header) "]))
        #expect(state.etag == kept)
        #expect(state.lastModified == kept)
    }

    @Test("a match id is percent-encoded as one path segment", arguments: [
        ("m1", "/matches/m1"), ("a/b", "/matches/a%2Fb"), ("é 1", "/matches/%C3%A9%201"),
    ])
    func matchPathsAreOneSegment(id: String, path: String) {
        #expect(FeedRequest.match(id).path == path)
        #expect(MatchPollState(matchId: id).nextRequest.path == path)
        #expect(MatchPollState(matchId: id).path == path)
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
