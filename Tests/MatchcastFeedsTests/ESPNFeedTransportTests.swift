import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import MatchcastCore
import MatchcastTesting
import NIOCore
import Synchronization
import Testing

@testable import MatchcastFeeds

/// `ESPNFeedTransport` over a scripted upstream (and once over HTTP): routes, the shared
/// scoreboard, summaries, errors; and `FeedSpec`'s `espn:` form.
@Suite("ESPNFeedTransport")
struct ESPNFeedTransportTests {
    static let scoreboardPath = "/apis/site/v2/sports/soccer/eng.1/scoreboard"
    static let summaryPath = "/apis/site/v2/sports/soccer/eng.1/summary"

    static func competitor(_ side: String, id: String, name: String, short: String, score: String) -> String {
        """
        {"id": "\(id)", "homeAway": "\(side)", "score": \(score),
         "team": {"id": "\(id)", "displayName": "\(name)", "abbreviation": "\(short)"}}
        """
    }

    static func event(id: String, state: String, name: String, period: Int, clock: String, home: String, away: String, details: String = "[]") -> String {
        """
        {"id": "\(id)", "date": "2026-03-21T15:00Z",
         "competitions": [{"id": "\(id)", "date": "2026-03-21T15:00Z", "venue": {"fullName": "Home Ground"},
           "status": {"displayClock": "\(clock)", "period": \(period),
                      "type": {"name": "\(name)", "state": "\(state)", "completed": \(state == "post")}},
           "competitors": [\(competitor("home", id: "1", name: "Home FC", short: "HOM", score: home)),
                           \(competitor("away", id: "2", name: "Away FC", short: "AWY", score: away))],
           "details": \(details)}]}
        """
    }

    static let goalDetail = """
        [{"type": {"id": "70", "text": "Goal"}, "clock": {"value": 3996.0, "displayValue": "67'"}, "team": {"id": "1"},
          "scoringPlay": true, "athletesInvolved": [{"displayName": "A. Striker"}]}]
        """

    /// Live 1-0 (101), scheduled (102), a score that is not a number (103), finished (104).
    static let scoreboard = Data(
        """
        {"leagues": [{"name": "English Premier League", "abbreviation": "EPL", "slug": "eng.1"}],
         "events": [\(event(id: "101", state: "in", name: "STATUS_SECOND_HALF", period: 2, clock: "67'", home: "\"1\"", away: "\"0\"", details: goalDetail)),
                    \(event(id: "102", state: "pre", name: "STATUS_SCHEDULED", period: 0, clock: "0'", home: "\"0\"", away: "\"0\"")),
                    \(event(id: "103", state: "in", name: "STATUS_FIRST_HALF", period: 1, clock: "12'", home: "\"two\"", away: "\"0\"")),
                    \(event(id: "104", state: "post", name: "STATUS_FULL_TIME", period: 2, clock: "90'+4'", home: "\"2\"", away: "\"2\""))]}
        """.utf8)

    static let summary101 = Data(
        """
        {"header": {"id": "101", "league": {"abbreviation": "EPL"},
           "competitions": [{"id": "101", "status": {"type": {"name": "STATUS_SECOND_HALF", "state": "in", "completed": false}},
             "competitors": [\(competitor("home", id: "1", name: "Home FC", short: "HOM", score: "\"1\"")),
                             \(competitor("away", id: "2", name: "Away FC", short: "AWY", score: "\"0\""))]}]},
         "gameInfo": {"venue": {"fullName": "The Summary Stadium"}},
         "keyEvents": [
           {"id": "9001", "type": {"text": "Kickoff", "type": "kickoff"}, "clock": {"value": 0, "displayValue": ""}},
           {"id": "9002", "type": {"text": "Goal", "type": "goal"}, "scoringPlay": true, "clock": {"value": 3996.0, "displayValue": "67'"},
            "team": {"id": "1"}, "participants": [{"athlete": {"displayName": "A. Striker"}}], "wallclock": "2026-03-21T16:12:00Z"},
           {"id": "9003", "type": {"text": "Yellow Card", "type": "yellow-card"}, "clock": {"value": 4100.0, "displayValue": "69'"},
            "team": {"id": "2"}, "participants": [{"athlete": {"displayName": "B. Defender"}}]}]}
        """.utf8)

    /// Monotonic time the test moves by hand.
    final class Uptime: Sendable {
        private let value = Mutex<Duration>(.zero)
        var now: Duration { value.withLock { $0 } }
        func advance(by duration: Duration) { value.withLock { $0 += duration } }
    }

    /// An upstream ESPN: the scoreboard (with an ETag, 304 when it is sent back), summaries by id.
    static func upstream(
        scoreboard: Data = scoreboard, headers: [String: String] = ["etag": "\"sb1\""],
        summaries: [String: FeedResponse] = [:]
    ) -> ScriptedTransport {
        ScriptedTransport { request in
            if request.path == scoreboardPath {
                if let etag = headers["etag"], request.headers["if-none-match"] == etag {
                    return .response(FeedResponse(status: 304, headers: headers))
                }
                return .response(FeedResponse(status: 200, headers: headers, body: scoreboard))
            }
            if request.path.hasPrefix(summaryPath + "?event=") {
                let id = String(request.path.dropFirst((summaryPath + "?event=").count))
                return .response(summaries[id] ?? FeedResponse(status: 404, body: Data("{}".utf8)))
            }
            return .response(FeedResponse(status: 404))
        }
    }

    static func transport(_ upstream: ScriptedTransport, uptime: Uptime = Uptime()) throws -> ESPNFeedTransport {
        ESPNFeedTransport(
            league: try ESPNLeague(path: "soccer/eng.1"), upstream: upstream, uptime: { uptime.now }, now: { Fixtures.now })
    }

    static func errorObject(_ response: FeedResponse) throws -> [String: String] {
        let body = try #require(response.body)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [String: String]])
        return try #require(object["error"])
    }

    // MARK: Shared scoreboard

    @Test func oneScoreboardRequestServesEveryMatchWithinItsWindow() async throws {
        let upstream = Self.upstream()
        let uptime = Uptime()
        let transport = try Self.transport(upstream, uptime: uptime)
        // Fifty followers of two matches and a list poll, all at once.
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                group.addTask { (try? await transport.fetch(.match(index % 2 == 0 ? "espn:101" : "espn:102")).status) ?? 0 }
            }
            group.addTask { (try? await transport.fetch(.liveMatches).status) ?? 0 }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(upstream.requests.filter { $0.path == Self.scoreboardPath }.count == 1)
        // Summaries: one attempt for the live match (remembered as failed), none for the scheduled one.
        #expect(upstream.requests.filter { $0.path.hasPrefix(Self.summaryPath) }.map(\.path) == [Self.summaryPath + "?event=101"])

        // Past the 10 s default window: revalidated with the ETag; the 304 keeps serving.
        uptime.advance(by: .seconds(11))
        let again = try await transport.fetch(.match("espn:101"))
        #expect(again.status == 200)
        let boardRequests = upstream.requests.filter { $0.path == Self.scoreboardPath }
        #expect(boardRequests.count == 2)
        #expect(boardRequests.last?.headers["if-none-match"] == "\"sb1\"")
        #expect(try FeedDecoding.match(try #require(again.body)).match.id == "espn:101")
    }

    @Test func maxAgeSetsTheWindowAndRetryAfter() async throws {
        let upstream = Self.upstream(headers: ["cache-control": "public, max-age=30"])
        let uptime = Uptime()
        let transport = try Self.transport(upstream, uptime: uptime)
        let first = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:102")).body))
        #expect(first.retryAfterMs == 30_000)
        uptime.advance(by: .seconds(20))
        _ = try await transport.fetch(.match("espn:102"))
        #expect(upstream.requests.count == 1)
        uptime.advance(by: .seconds(11))
        _ = try await transport.fetch(.match("espn:102"))
        #expect(upstream.requests.count == 2)
    }

    @Test func retryAfterWithoutMaxAgeFollowsTheStatus() async throws {
        let transport = try Self.transport(Self.upstream())
        let live = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:101")).body))
        let scheduled = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:102")).body))
        let final = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:104")).body))
        #expect(live.retryAfterMs == 10_000)
        #expect(scheduled.retryAfterMs == 60_000)
        #expect(final.retryAfterMs == 300_000)
    }

    // MARK: Summaries

    @Test func summaryFailureServesTheMatchFromTheScoreboard() async throws {
        for failure in [FeedResponse(status: 500), FeedResponse(status: 200, body: Data("not json".utf8))] {
            let transport = try Self.transport(Self.upstream(summaries: ["101": failure]))
            let response = try await transport.fetch(.match("espn:101"))
            #expect(response.status == 200)
            let match = try FeedDecoding.match(try #require(response.body)).match
            #expect(match.score == .teamTotals(TeamScore(home: 1, away: 0, period: "2H", clock: "67'")))
            #expect(match.status == .live)
            #expect(match.venue == "Home Ground")
            #expect(match.competition == "EPL")
            #expect(match.events.map(\.id) == ["goal-1-3996"])
            #expect(match.events.first?.text == "67' GOAL HOM · A. Striker")
        }
    }

    @Test func summaryEnrichesWithKeyEventsAndVenue() async throws {
        let upstream = Self.upstream(summaries: ["101": FeedResponse(status: 200, body: Self.summary101)])
        let transport = try Self.transport(upstream)
        let match = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:101")).body)).match
        #expect(match.score == .teamTotals(TeamScore(home: 1, away: 0, period: "2H", clock: "67'")))
        #expect(match.venue == "The Summary Stadium")
        // The goal keeps the id the scoreboard gave it; the card is new; the kick-off is left out.
        #expect(match.events.map(\.id) == ["goal-1-3996", "yellowCard-2-4100"])
        #expect(match.events.map(\.type) == ["goal", "yellowCard"])
        #expect(match.events.first?.at == JSON.parseDate("2026-03-21T16:12:00Z"))
        // Within the window the summary is not asked again.
        _ = try await transport.fetch(.match("espn:101"))
        #expect(upstream.requests.filter { $0.path.hasPrefix(Self.summaryPath) }.count == 1)
    }

    // MARK: Errors

    @Test func anUnconvertibleMatchIs502NamingTheField() async throws {
        let transport = try Self.transport(Self.upstream())
        let response = try await transport.fetch(.match("espn:103"))
        #expect(response.status == 502)
        #expect(response.headers["etag"] == nil)
        let error = try Self.errorObject(response)
        #expect(error["code"] == "bad_upstream_body")
        #expect(error["message"]?.contains("events[2].competitions[0].competitors[0].score") == true)
        // The other matches of the same scoreboard are unharmed.
        #expect(try await transport.fetch(.match("espn:101")).status == 200)
    }

    @Test func anUnreadableScoreboardIs502() async throws {
        let transport = try Self.transport(Self.upstream(scoreboard: Data(#"{"events": "soon"}"#.utf8)))
        let response = try await transport.fetch(.liveMatches)
        #expect(response.status == 502)
        #expect(try Self.errorObject(response)["message"]?.contains("events") == true)
    }

    @Test func upstreamErrorStatusesPassThrough() async throws {
        let answer = FeedResponse(status: 503, headers: ["retry-after": "30"])
        let transport = try Self.transport(ScriptedTransport { _ in .response(answer) })
        #expect(try await transport.fetch(.match("espn:101")) == answer)
        #expect(try await transport.fetch(.liveMatches) == answer)
    }

    @Test(arguments: ["espn:999", "999", "espn:", "espn:12a", "mlb:101"])
    func unknownIdsAre404(_ id: String) async throws {
        let upstream = Self.upstream()
        let response = try await Self.transport(upstream).fetch(.match(id))
        #expect(response.status == 404)
        #expect(try Self.errorObject(response)["code"] == "not_found")
        if id != "espn:999" { #expect(upstream.requests.isEmpty) }
    }

    @Test func aMatchOffTheScoreboardIsReadFromItsSummary() async throws {
        let upstream = Self.upstream(summaries: ["555": FeedResponse(status: 200, body: Data(String(decoding: Self.summary101, as: UTF8.self).replacingOccurrences(of: "\"101\"", with: "\"555\"").utf8))])
        let match = try FeedDecoding.match(try #require(try await Self.transport(upstream).fetch(.match("espn:555")).body)).match
        #expect(match.id == "espn:555")
        #expect(match.events.count == 2)
    }

    // MARK: Lists

    @Test func liveMatchesListsInProgressAndFinishedAndNamesTheSkipped() async throws {
        let transport = try Self.transport(Self.upstream())
        let response = try await transport.fetch(.liveMatches)
        let body = try #require(response.body)
        let list = try FeedDecoding.liveMatches(body)
        #expect(list.matches.map(\.id) == ["espn:101", "espn:104"])
        #expect(list.retryAfterMs == 10_000)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let skipped = try #require(object["skipped"] as? [[String: String]])
        #expect(skipped.map { $0["id"] } == ["espn:103"])
        // The same list again: a 304 for the ETag the client holds.
        let etag = try #require(response.headers["etag"])
        let again = try await transport.fetch(FeedRequest(path: "/live-matches", headers: ["if-none-match": etag]))
        #expect(again == FeedResponse(status: 304, headers: ["etag": etag]))
    }

    @Test func scheduleAsksForThatDaysScoreboard() async throws {
        let upstream = ScriptedTransport { _ in .response(FeedResponse(status: 200, body: Self.scoreboard)) }
        let transport = try Self.transport(upstream)
        let response = try await transport.fetch(.schedule(date: "2026-03-21"))
        let schedule = try FeedDecoding.schedule(try #require(response.body))
        #expect(schedule.date == "2026-03-21")
        #expect(schedule.matches.map(\.id) == ["espn:101", "espn:102", "espn:104"])
        #expect(upstream.requests.map(\.path) == [Self.scoreboardPath + "?dates=20260321"])
        #expect(try await transport.fetch(.schedule(date: "21/03/2026")).status == 400)
    }

    // MARK: FeedSpec

    @Test(arguments: [
        ("espn:soccer/eng.1", FeedSpec.espn(sport: "soccer", league: "eng.1", baseURL: "https://site.api.espn.com")),
        ("espn:football/nfl@http://localhost:8080", .espn(sport: "football", league: "nfl", baseURL: "http://localhost:8080")),
        (" espn:basketball/mens-college-basketball ", .espn(sport: "basketball", league: "mens-college-basketball", baseURL: "https://site.api.espn.com")),
        ("espn:soccer/all", .espn(sport: "soccer", league: "all", baseURL: "https://site.api.espn.com")),
        ("fake", .fake(speed: 1, seed: 1)),
        ("mlb", .mlb(baseURL: "https://statsapi.mlb.com")),
        ("mlb:http://127.0.0.1:9", .mlb(baseURL: "http://127.0.0.1:9")),
        ("http://127.0.0.1:8090", .native(baseURL: "http://127.0.0.1:8090")),
    ])
    func feedSpecParses(_ text: String, _ expected: FeedSpec) throws {
        let spec = try FeedSpec(parsing: text)
        #expect(spec == expected)
        #expect(try FeedSpec(parsing: spec.description) == spec)
    }

    @Test func feedSpecDescribesESPN() throws {
        #expect(try FeedSpec(parsing: "espn:soccer/eng.1").description == "espn:soccer/eng.1")
        #expect(try FeedSpec(parsing: "espn:hockey/nhl@http://h:1").description == "espn:hockey/nhl@http://h:1")
    }

    @Test(arguments: [
        ("espn", "espn:{sport}/{league}"),
        ("espn:", "espn:{sport}/{league}"),
        ("espn:soccer", "espn:{sport}/{league}"),
        ("espn:soccer/", "espn:{sport}/{league}"),
        ("espn:soccer/eng.1/x", "espn:{sport}/{league}"),
        ("espn:Soccer/EPL", "espn:{sport}/{league}"),
        ("espn:volleyball/womens-college-volleyball", "volleyball is not a sport Matchcast models"),
        ("espn:racing/nascar-premier", "racing is not a sport Matchcast models"),
        ("espn:soccer/eng.1@ftp://x", "must be an http(s) URL"),
        ("espn:soccer/eng.1@", "must be an http(s) URL"),
    ])
    func feedSpecRefusesMalformedESPN(_ text: String, _ says: String) {
        let error = #expect(throws: FeedError.self) { try FeedSpec(parsing: text) }
        #expect(error?.reason == "config")
        #expect(error?.description.contains(says) == true, "\(String(describing: error))")
    }

    // MARK: Over HTTP

    @Test func overHTTPOneScoreboardRequestServesTwoMatches() async throws {
        let hits = Mutex<[String]>([])
        let router = Router()
        router.get(RouterPath(Self.scoreboardPath)) { request, _ -> Response in
            hits.withLock { $0.append(request.uri.path) }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "max-age=60"],
                body: .init(byteBuffer: ByteBuffer(bytes: Self.scoreboard)))
        }
        router.get(RouterPath(Self.summaryPath)) { request, _ -> Response in
            hits.withLock { $0.append(request.uri.path) }
            return Response(status: .notFound)
        }
        var logger = Logger(label: "espn-test")
        logger.logLevel = .error
        let server = try await LocalHTTPServer.start(name: "ESPN feed") { [logger] onServerRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: onServerRunning, logger: logger)
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            do {
                let port = server.port
                let spec = try FeedSpec(parsing: "espn:soccer/eng.1@http://127.0.0.1:\(port)")
                let transport = try spec.makeTransport(client: client, clock: ContinuousClock())
                let live = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:101")).body))
                let final = try FeedDecoding.match(try #require(try await transport.fetch(.match("espn:104")).body))
                #expect(live.match.score == .teamTotals(TeamScore(home: 1, away: 0, period: "2H", clock: "67'")))
                #expect(live.retryAfterMs == 60_000)
                #expect(final.match.status == .completed)
                #expect(hits.withLock { $0 }.filter { $0 == Self.scoreboardPath }.count == 1)
                #expect(hits.withLock { $0 }.count == 3)  // the scoreboard, and each match's summary once
            }
        } catch {
            try await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }
}
