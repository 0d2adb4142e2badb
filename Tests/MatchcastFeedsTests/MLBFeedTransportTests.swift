import Foundation
import MatchcastCore
import Synchronization
import Testing

@testable import MatchcastFeeds

/// `MLBFeedTransport` over a stub upstream: path translation, conversion, pass-through.
@Suite("MLBFeedTransport")
struct MLBFeedTransportTests {
    /// Answers every request with one response and remembers what it was asked.
    private final class StubUpstream: FeedTransport {
        private let answer: FeedResponse
        private let asked = Mutex<[FeedRequest]>([])

        init(_ answer: FeedResponse) {
            self.answer = answer
        }

        var requests: [FeedRequest] { asked.withLock { $0 } }

        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            asked.withLock { $0.append(request) }
            return answer
        }
    }

    private static let liveBody = Data(MLBLiveFeedTests.liveGame.utf8)

    @Test func matchIsTranslatedAndConverted() async throws {
        let upstream = StubUpstream(
            FeedResponse(
                status: 200, headers: ["etag": "\"abc\"", "content-type": "application/json;charset=UTF-8", "content-length": "999"],
                body: Self.liveBody))
        let transport = MLBFeedTransport(upstream: upstream)
        var request = FeedRequest.match("123456")
        request.headers["if-none-match"] = "\"old\""

        let response = try await transport.fetch(request)

        #expect(upstream.requests == [FeedRequest(path: "/api/v1.1/game/123456/feed/live", headers: ["if-none-match": "\"old\""])])
        #expect(response.status == 200)
        #expect(response.headers == ["etag": "\"abc\"", "content-type": "application/json"])
        let body = try #require(response.body)
        let decoded = try FeedDecoding.match(body)
        #expect(decoded.retryAfterMs == 10_000)
        #expect(decoded.match == (try MLBLiveFeed.snapshot(from: Self.liveBody)).snapshot)
        // Deterministic bytes: the native body as JSON.encoder() writes it.
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(Set(object.keys) == ["retryAfterMs", "match"])
    }

    @Test("mlb:{gamePk}, the documented id, is served as the bare gamePk is, under its own id")
    func prefixedIdIsServedUnderItsOwnId() async throws {
        let upstream = StubUpstream(FeedResponse(status: 200, headers: ["etag": "\"abc\""], body: Self.liveBody))
        let transport = MLBFeedTransport(upstream: upstream)

        let prefixed = try await transport.fetch(.match("mlb:123456"))
        let bare = try await transport.fetch(.match("123456"))

        #expect(upstream.requests.map(\.path) == ["/api/v1.1/game/123456/feed/live", "/api/v1.1/game/123456/feed/live"])
        let prefixedMatch = try FeedDecoding.match(try #require(prefixed.body)).match
        let bareMatch = try FeedDecoding.match(try #require(bare.body)).match
        #expect(prefixedMatch.id == "mlb:123456")
        #expect(bareMatch.id == "123456")
        var renamed = bareMatch
        renamed.id = "mlb:123456"
        #expect(prefixedMatch == renamed, "the same snapshot under the other id")
    }

    @Test func notModifiedPassesThrough() async throws {
        let upstream = StubUpstream(FeedResponse(status: 304, headers: ["etag": "\"abc\""]))
        let response = try await MLBFeedTransport(upstream: upstream).fetch(.match("123456"))
        #expect(response == FeedResponse(status: 304, headers: ["etag": "\"abc\""]))
    }

    @Test(arguments: [404, 429, 500, 503])
    func errorStatusesPassThrough(_ status: Int) async throws {
        let answer = FeedResponse(status: status, headers: ["retry-after": "30"], body: Data("upstream says no".utf8))
        let response = try await MLBFeedTransport(upstream: StubUpstream(answer)).fetch(.match("123456"))
        #expect(response == answer)
    }

    @Test func unconvertibleBodyIs502NamingTheField() async throws {
        let broken = MLBLiveFeedTests.liveGame.replacingOccurrences(of: #""outs": 1"#, with: #""outs": "one""#)
        let upstream = StubUpstream(FeedResponse(status: 200, headers: ["etag": "\"abc\""], body: Data(broken.utf8)))
        let response = try await MLBFeedTransport(upstream: upstream).fetch(.match("123456"))
        #expect(response.status == 502)
        #expect(response.headers["etag"] == nil)
        let body = try #require(response.body)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [String: String]])
        #expect(object["error"]?["code"] == "bad_upstream_body")
        #expect(object["error"]?["message"]?.contains("liveData.linescore.outs") == true)
    }

    @Test func emptyBodyIs502() async throws {
        let response = try await MLBFeedTransport(upstream: StubUpstream(FeedResponse(status: 200))).fetch(.match("1"))
        #expect(response.status == 502)
    }

    @Test(arguments: [
        FeedRequest.liveMatches, .schedule(date: "2024-07-01"), .match("not-a-number"), FeedRequest(path: "/matches/"),
        .match("mlb:"), .match("mlb:12a"), .match("nhl:2024030121"),
    ])
    func unsupportedRequestsAre404WithoutCallingUpstream(_ request: FeedRequest) async throws {
        let upstream = StubUpstream(FeedResponse(status: 200, body: Self.liveBody))
        let response = try await MLBFeedTransport(upstream: upstream).fetch(request)
        #expect(response.status == 404)
        #expect(response.headers["content-type"] == "application/json")
        #expect(upstream.requests.isEmpty)
        let body = try #require(response.body)
        #expect((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] != nil)
    }

    @Test func defaultBaseIsTheStatsAPI() {
        #expect(MLBFeedTransport.defaultBaseURL == "https://statsapi.mlb.com")
    }
}
