import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import MatchcastCore
import MatchcastTesting
import NIOCore
import Testing

@testable import MatchcastFeeds

/// `NHLFeedTransport` over a scripted upstream (path translation, conversion, pass-through), once
/// through a real `HTTPFeedTransport` against a local server, and the `nhl` feed specs.
@Suite("NHLFeedTransport")
struct NHLFeedTransportTests {
    private static let scoreBody = Data(NHLWebFeedTests.scoreList.utf8)
    private static let playByPlayBody = Data(NHLWebFeedTests.playByPlay().utf8)
    private static let fixedNow = Date(timeIntervalSince1970: 1_745_368_200)

    /// An upstream api-web answering the score list and the play-by-play of game 2024030121.
    private static func upstream(headers: [String: String] = [:], playByPlay: Data = playByPlayBody) -> ScriptedTransport {
        ScriptedTransport { request in
            switch request.path {
            case "/v1/score/now", "/v1/score/2025-04-22":
                .response(FeedResponse(status: 200, headers: headers, body: scoreBody))
            case "/v1/gamecenter/2024030121/play-by-play":
                .response(FeedResponse(status: 200, headers: headers, body: playByPlay))
            default:
                .response(FeedResponse(status: 404, body: Data("not found".utf8)))
            }
        }
    }

    private static func transport(_ upstream: ScriptedTransport) -> NHLFeedTransport {
        NHLFeedTransport(upstream: upstream, now: { fixedNow })
    }

    @Test func liveListIsOneScoreRequestOfGamesInPlayOrJustFinal() async throws {
        let upstream = Self.upstream(headers: ["etag": "\"s1\"", "content-type": "application/json", "x-cache": "HIT"])
        var request = FeedRequest.liveMatches
        request.headers["if-none-match"] = "\"s0\""

        let response = try await Self.transport(upstream).fetch(request)

        #expect(upstream.requests == [FeedRequest(path: "/v1/score/now", headers: ["if-none-match": "\"s0\""])])
        #expect(response.status == 200)
        #expect(response.headers == ["etag": "\"s1\"", "content-type": "application/json"])
        let list = try FeedDecoding.liveMatches(try #require(response.body))
        #expect(list.failures == [])
        // LIVE, CRIT in an intermission and FINAL; not the OFF, FUT or postponed games.
        #expect(list.matches.map(\.id) == ["nhl:2024030121", "nhl:2024030131", "nhl:2024030141"])
        #expect(list.matches.map(\.status) == [.live, .break, .completed])
        #expect(list.retryAfterMs == 10_000)
        #expect(list.generatedAt == Self.fixedNow)
        #expect(list.matches == Array(try NHLWebFeed.snapshots(fromScore: Self.scoreBody).matches.prefix(3)))
    }

    @Test func retryAfterComesFromMaxAgeAndGeneratedAtFromTheDateHeader() async throws {
        let upstream = Self.upstream(headers: ["cache-control": "public, max-age=7", "date": "Wed, 23 Apr 2025 01:00:00 GMT"])
        let list = try FeedDecoding.liveMatches(try #require(try await Self.transport(upstream).fetch(.liveMatches).body))
        #expect(list.retryAfterMs == 7_000)
        #expect(list.generatedAt == JSON.parseDate("2025-04-23T01:00:00Z"))
        let match = try FeedDecoding.match(try #require(try await Self.transport(upstream).fetch(.match("nhl:2024030121")).body))
        #expect(match.retryAfterMs == 7_000)
    }

    @Test(arguments: ["max-age=0", "no-cache", "max-age=abc", "max-age=99999999999999999999"])
    func withoutAUsableMaxAgeTheDefaultApplies(_ cacheControl: String) async throws {
        let upstream = Self.upstream(headers: ["cache-control": cacheControl])
        let match = try FeedDecoding.match(try #require(try await Self.transport(upstream).fetch(.match("nhl:2024030121")).body))
        #expect(match.retryAfterMs == 10_000)
    }

    @Test func matchIsThePlayByPlayConverted() async throws {
        let upstream = Self.upstream(headers: ["etag": "\"p1\"", "last-modified": "Wed, 23 Apr 2025 01:00:00 GMT", "content-length": "9"])
        var request = FeedRequest.match("nhl:2024030121")
        request.headers["if-modified-since"] = "Wed, 23 Apr 2025 00:59:00 GMT"

        let response = try await Self.transport(upstream).fetch(request)

        #expect(upstream.requests == [
            FeedRequest(path: "/v1/gamecenter/2024030121/play-by-play", headers: ["if-modified-since": "Wed, 23 Apr 2025 00:59:00 GMT"]),
        ])
        #expect(response.status == 200)
        #expect(response.headers == ["etag": "\"p1\"", "last-modified": "Wed, 23 Apr 2025 01:00:00 GMT", "content-type": "application/json"])
        let decoded = try FeedDecoding.match(try #require(response.body))
        #expect(decoded.retryAfterMs == 10_000)
        #expect(decoded.match == (try NHLWebFeed.snapshot(fromPlayByPlay: Self.playByPlayBody)))
    }

    @Test func aMatchSourceFollowsAnNHLGameByItsId() async throws {
        let transport = Self.transport(Self.upstream())
        let source = MatchSource(matchId: "nhl:2024030121", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
        let snapshot = try await source.refresh()
        #expect(snapshot.score == .teamTotals(TeamScore(home: 0, away: 2, period: "P2", clock: "09:03")))
        #expect(await source.nextPollDelay() == .seconds(10))
    }

    @Test func intermissionIsServedAsABreak() async throws {
        let body = Data(NHLWebFeedTests.playByPlay(timeRemaining: "16:40", secondsRemaining: 1000, intermission: true).utf8)
        let response = try await Self.transport(Self.upstream(playByPlay: body)).fetch(.match("nhl:2024030121"))
        let decoded = try FeedDecoding.match(try #require(response.body))
        #expect(decoded.match.status == .break)
        #expect(decoded.retryAfterMs == 30_000)
    }

    @Test func scheduleIsTheDaysScoreList() async throws {
        let upstream = Self.upstream()
        let response = try await Self.transport(upstream).fetch(.schedule(date: "2025-04-22"))
        #expect(upstream.requests.map(\.path) == ["/v1/score/2025-04-22"])
        let schedule = try FeedDecoding.schedule(try #require(response.body))
        #expect(schedule.date == "2025-04-22")
        #expect(schedule.matches.count == 6)
        #expect(schedule.matches.map(\.status).contains(.postponed))
    }

    @Test(arguments: ["2025-4-22", "tomorrow", "2025-13-01", "2025-04-22/../x", ""])
    func scheduleWithoutADateIs400WithoutCallingUpstream(_ date: String) async throws {
        let upstream = Self.upstream()
        let response = try await Self.transport(upstream).fetch(FeedRequest(path: "/schedule?date=\(date)"))
        #expect(response.status == 400)
        #expect(upstream.requests.isEmpty)
    }

    @Test func notModifiedAndErrorsPassThrough() async throws {
        for answer in [
            FeedResponse(status: 304, headers: ["etag": "\"p1\""]),
            FeedResponse(status: 503, headers: ["retry-after": "30"], body: Data("busy".utf8)),
            FeedResponse(status: 404, body: Data("no game".utf8)),
        ] {
            let upstream = ScriptedTransport(handler: { _ in .response(answer) })
            for request in [FeedRequest.liveMatches, .match("nhl:2024030121"), .schedule(date: "2025-04-22")] {
                #expect(try await Self.transport(upstream).fetch(request) == answer)
            }
        }
    }

    @Test func unconvertiblePlayByPlayIs502NamingTheFieldWhenTheScoreListLacksTheGame() async throws {
        let broken = NHLWebFeedTests.playByPlay().replacingOccurrences(of: #""gameState": "LIVE""#, with: #""gameState": ["LIVE"]"#)
        let upstream = ScriptedTransport { request in
            request.path == "/v1/score/now"
                ? .response(FeedResponse(status: 200, body: Data(#"{"currentDate": "2025-04-22", "games": []}"#.utf8)))
                : .response(FeedResponse(status: 200, headers: ["etag": "\"p1\""], body: Data(broken.utf8)))
        }
        let response = try await Self.transport(upstream).fetch(.match("nhl:2024030121"))
        #expect(response.status == 502)
        #expect(response.headers["etag"] == nil)
        let body = try #require(response.body)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [String: String]])
        #expect(object["error"]?["code"] == "bad_upstream_body")
        #expect(object["error"]?["message"]?.contains("field 'gameState'") == true, "\(object)")
    }

    /// What the play-by-play fails with, each answered from the score list instead.
    static let playByPlayFailures: [(String, ScriptedTransport.Reply)] = [
        ("503", .response(FeedResponse(status: 503, headers: ["retry-after": "30"], body: Data("busy".utf8)))),
        ("429", .response(FeedResponse(status: 429, body: Data("slow down".utf8)))),
        ("transport error", .failure(URLError(.timedOut))),
        ("unconvertible body", .response(FeedResponse(status: 200, headers: ["etag": "\"p1\""], body: Data(#"{"id": "x"}"#.utf8)))),
        ("another game's", .response(FeedResponse(status: 200, body: Data(NHLWebFeedTests.playByPlay(id: 2024030122).utf8)))),
    ]

    @Test("a play-by-play that fails leaves the game to the score list: same game, same progress, no validators",
          arguments: 0..<5)
    func aFailedPlayByPlayFallsBackToTheScoreList(_ index: Int) async throws {
        let (what, failure) = Self.playByPlayFailures[index]
        let upstream = ScriptedTransport { request in
            request.path == "/v1/score/now"
                ? .response(FeedResponse(status: 200, headers: ["etag": "\"s1\"", "cache-control": "max-age=5"], body: Self.scoreBody))
                : failure
        }
        var request = FeedRequest.match("nhl:2024030121")
        request.headers["if-none-match"] = "\"p0\""
        let response = try await Self.transport(upstream).fetch(request)
        #expect(response.status == 200, "\(what)")
        #expect(response.headers["etag"] == nil, "the score list's ETag is not the game's")
        #expect(upstream.requests.map(\.path) == ["/v1/gamecenter/2024030121/play-by-play", "/v1/score/now"])
        #expect(upstream.requests.last?.headers["if-none-match"] == nil, "the score list is asked unconditionally")
        let answer = try FeedDecoding.match(try #require(response.body))
        let listed = try #require(try NHLWebFeed.snapshots(fromScore: Self.scoreBody).matches.first { $0.id == "nhl:2024030121" })
        #expect(answer.match == listed)
        #expect(answer.retryAfterMs == 5_000)
        // The play-by-play and the score list count progress the same way: the fallback never looks stale.
        let full = try NHLWebFeed.snapshot(fromPlayByPlay: Self.playByPlayBody)
        #expect(answer.match.seq == full.seq)
    }

    @Test func aPlayByPlayThatIsNotThereIsNotAFailureToFallBackFrom() async throws {
        let upstream = ScriptedTransport { request in
            request.path == "/v1/score/now"
                ? .response(FeedResponse(status: 200, body: Self.scoreBody))
                : .response(FeedResponse(status: 404, body: Data("no game".utf8)))
        }
        let response = try await Self.transport(upstream).fetch(.match("nhl:2024030121"))
        #expect(response.status == 404)
        #expect(upstream.requests.map(\.path) == ["/v1/gamecenter/2024030121/play-by-play"])
    }

    @Test func unconvertibleScoreListIs502NamingTheGame() async throws {
        let broken = NHLWebFeedTests.scoreList.replacingOccurrences(of: #""id": 13, "abbrev": "FLA""#, with: #""abbrev": "FLA""#)
        let upstream = ScriptedTransport(handler: { _ in .response(FeedResponse(status: 200, body: Data(broken.utf8))) })
        for request in [FeedRequest.liveMatches, .schedule(date: "2025-04-22")] {
            let response = try await Self.transport(upstream).fetch(request)
            #expect(response.status == 502)
            let text = String(decoding: try #require(response.body), as: UTF8.self)
            #expect(text.contains("games[0].awayTeam.id"), "\(text)")
        }
        let empty = ScriptedTransport(handler: { _ in .response(FeedResponse(status: 200)) })
        #expect(try await Self.transport(empty).fetch(.match("nhl:2024030121")).status == 502)
    }

    @Test(arguments: [
        FeedRequest.match("2024030121"), .match("nhl:abc"), .match("nhl:"), .match("mlb:2024030121"), .match("nhl:02024030121"),
        .match("nhl:1234567890123456789"), .match("nhl:-5"), FeedRequest(path: "/matches/"), FeedRequest(path: "/v1/score/now"),
    ])
    func unknownIdsAndPathsAre404WithoutCallingUpstream(_ request: FeedRequest) async throws {
        let upstream = Self.upstream()
        let response = try await Self.transport(upstream).fetch(request)
        #expect(response.status == 404)
        #expect(response.headers["content-type"] == "application/json")
        #expect(upstream.requests.isEmpty)
        let body = try #require(response.body)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [String: String]])
        #expect(object["error"]?["code"] == "not_found")
    }

    @Test func aPercentEncodedIdIsAccepted() async throws {
        let response = try await Self.transport(Self.upstream()).fetch(FeedRequest(path: "/matches/nhl%3A2024030121"))
        #expect(response.status == 200)
    }

    // MARK: Over HTTP

    @Test func theNHLSpecPollsALocalAPIWebOverHTTP() async throws {
        let router = Router()
        router.get("/v1/score/now") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=5"],
                body: .init(byteBuffer: ByteBuffer(bytes: Self.scoreBody)))
        }
        router.get("/v1/gamecenter/:id/play-by-play") { request, context -> Response in
            guard context.parameters.get("id") == "2024030121" else { return Response(status: .notFound) }
            if request.headers[.ifNoneMatch] == "\"p1\"" { return Response(status: .notModified, headers: [.eTag: "\"p1\""]) }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .eTag: "\"p1\""],
                body: .init(byteBuffer: ByteBuffer(bytes: Self.playByPlayBody)))
        }
        var logger = Logger(label: "nhl-test")
        logger.logLevel = .error
        let server = try await LocalHTTPServer.start(name: "NHL feed") { [logger] onServerRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: onServerRunning, logger: logger)
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            do {
                let port = server.port

                let spec = try FeedSpec(parsing: "nhl@http://127.0.0.1:\(port)")
                let transport = try spec.makeTransport(client: client, clock: ContinuousClock())
                #expect(transport is NHLFeedTransport)

                let list = try FeedDecoding.liveMatches(try #require(try await transport.fetch(.liveMatches).body))
                #expect(list.matches.map(\.id) == ["nhl:2024030121", "nhl:2024030131", "nhl:2024030141"])
                #expect(list.retryAfterMs == 5_000)

                let source = MatchSource(matchId: "nhl:2024030121", transport: transport, clock: ManualClock(), policy: Fixtures.policy, now: { Fixtures.now })
                let first = try await source.refresh()
                #expect(first.events.map(\.id) == ["goal-100", "goal-300"])
                let notModified = try await transport.fetch(FeedRequest(path: "/matches/nhl:2024030121", headers: ["if-none-match": "\"p1\""]))
                #expect(notModified.status == 304)
                #expect(try await transport.fetch(.match("nhl:2024030999")).status == 404)
            }
        } catch {
            try await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    // MARK: Feed spec

    @Test func nhlSpecs() throws {
        #expect(try FeedSpec(parsing: "nhl") == .nhl(baseURL: "https://api-web.nhle.com"))
        #expect(try FeedSpec(parsing: " nhl@http://localhost:8080 ") == .nhl(baseURL: "http://localhost:8080"))
        #expect(FeedSpec.nhl(baseURL: "http://localhost:8080").description == "nhl@http://localhost:8080")
        for spec in [FeedSpec.nhl(baseURL: NHLFeedTransport.defaultBaseURL), .nhl(baseURL: "http://127.0.0.1:9/proxy")] {
            #expect(try FeedSpec(parsing: spec.description) == spec)
        }
        #expect(FeedSpec.nhl(baseURL: NHLFeedTransport.defaultBaseURL).needsHTTPClient)
        #expect(throws: FeedError.self) { _ = try FeedSpec.nhl(baseURL: "http://x").makeTransport(client: nil, clock: ContinuousClock()) }
    }

    @Test func otherSpecsStillParse() throws {
        #expect(try FeedSpec(parsing: "fake") == .fake(speed: 1, seed: 1))
        #expect(try FeedSpec(parsing: "mlb") == .mlb(baseURL: "https://statsapi.mlb.com"))
        #expect(try FeedSpec(parsing: "mlb:http://localhost:1") == .mlb(baseURL: "http://localhost:1"))
        #expect(try FeedSpec(parsing: "http://127.0.0.1:8090") == .native(baseURL: "http://127.0.0.1:8090"))
    }

    @Test(arguments: ["nhl@", "nhl@ftp://feed.example", "nhl@localhost:8080", "nhl:http://localhost:8080", "nhlx", "NHL"])
    func malformedNHLSpecsAreRefused(_ text: String) {
        let error = #expect(throws: FeedError.self) { try FeedSpec(parsing: text) }
        #expect(error?.reason == "config")
        #expect(error?.description.contains("nhl") == true, "\(String(describing: error))")
    }
}
