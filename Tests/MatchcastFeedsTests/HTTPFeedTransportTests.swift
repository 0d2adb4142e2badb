import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import NIOCore
import Synchronization
import Testing

/// What the feed server saw, so tests can check the headers the transport sent.
private final class SeenRequests: Sendable {
    struct Seen: Sendable, Equatable {
        var path: String
        var ifNoneMatch: String?
        var accept: String?
        var userAgent: String?
    }

    private let items = Mutex<[Seen]>([])
    func append(_ item: Seen) { items.withLock { $0.append(item) } }
    var all: [Seen] { items.withLock { $0 } }
}

@Suite("HTTPFeedTransport")
struct HTTPFeedTransportTests {
    private static let snapshot = Fixtures.snapshot(id: "m1", seq: 3, home: 2, away: 1)

    /// A native v1 feed: `m1` with an ETag and 304s, `busy` answering 503 + Retry-After, `bad` malformed, `huge` 64 KiB.
    private func router(seen: SeenRequests) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/matches/:id") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            seen.append(
                .init(
                    path: request.uri.path, ifNoneMatch: request.headers[.ifNoneMatch], accept: request.headers[.accept],
                    userAgent: request.headers[.userAgent]))
            switch id {
            case "m1":
                if request.headers[.ifNoneMatch] == "\"v3\"" {
                    return Response(status: .notModified, headers: [.eTag: "\"v3\""])
                }
                let body = Fixtures.matchBody(Self.snapshot, retryAfterMs: 5_000)
                return Response(
                    status: .ok, headers: [.eTag: "\"v3\"", .contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: body)))
            case "busy":
                return Response(status: .serviceUnavailable, headers: [.retryAfter: "7"])
            case "bad":
                let body = Fixtures.matchBody(Fixtures.malformed(id: "bad"))
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: body)))
            case "huge":
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: " "), count: 64 * 1024)))
            case "stall":
                // The head and the start of a body, then nothing: a feed host that hangs mid-answer.
                return Response(
                    status: .ok, headers: [.contentType: "application/json", .contentLength: "1000"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: #"{"retryAfterMs":1000,"match":"#))
                        try await Task.sleep(for: .seconds(30))
                        try await writer.finish(nil)
                    })
            default:
                return Response(status: .notFound)
            }
        }
        return router
    }

    /// Runs a feed server on an ephemeral port and an `HTTPClient` for `body`, shutting both down after.
    private func withFeed(_ body: (_ baseURL: String, _ client: HTTPClient, _ seen: SeenRequests) async throws -> Void) async throws {
        let seen = SeenRequests()
        var logger = Logger(label: "feed-test")
        logger.logLevel = .error
        let router = router(seen: seen)
        let server = try await LocalHTTPServer.start(name: "feed") { [logger] onServerRunning in
            Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: onServerRunning, logger: logger)
        }
        do {
            try await withClient { client in try await body("http://127.0.0.1:\(server.port)/", client, seen) }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// An `HTTPClient` for `body`, shut down afterwards whether `body` throws or not.
    private func withClient(_ body: (HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await body(client)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    @Test func matchSourceOverHTTPUsesETagsRetryAfterAndReportsBadMatches() async throws {
        try await withFeed { baseURL, client, seen in
            let transport = try HTTPFeedTransport(client: client, baseURL: baseURL)
            let clock = ManualClock()
            let source = MatchSource(matchId: "m1", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })

            let first = try await source.refresh()
            #expect(first.seq == 3)
            #expect(first.score == .teamTotals(TeamScore(home: 2, away: 1, period: "2H")))
            #expect(await source.nextPollDelay() == .seconds(5))
            #expect(seen.all == [.init(path: "/matches/m1", ifNoneMatch: nil, accept: "application/json", userAgent: "matchcast")])

            // Fresh: served from the cache without a request.
            #expect(try await source.load() == first)
            #expect(seen.all.count == 1)

            // Due: a conditional GET, answered 304, keeps the cache and the 5 s interval.
            clock.advance(by: .seconds(5))
            let result = try await source.poll()
            #expect(result.outcome == .unchanged)
            #expect(result.delay == .seconds(5))
            #expect(await source.snapshot == first)
            #expect(seen.all.last?.ifNoneMatch == "\"v3\"")

            let busy = MatchSource(matchId: "busy", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
            let busyResult = try await busy.poll()
            #expect(busyResult.outcome == .failed(.status(503, path: "/matches/busy")))
            #expect(busyResult.delay == .seconds(7))
            #expect(await busy.nextPollDelay() == .seconds(7))

            let bad = MatchSource(matchId: "bad", transport: transport, clock: clock, policy: Fixtures.policy, now: { Fixtures.now })
            let error = await #expect(throws: FeedError.self) { try await bad.refresh() }
            #expect(error?.reason == "decode")
            #expect(error?.description == "decoding /matches/bad: field 'match.score.home': expected a number")
        }
    }

    @Test func rawResponsesHaveLowerCasedHeadersAndNoBodyOn304() async throws {
        try await withFeed { baseURL, client, _ in
            let transport = try HTTPFeedTransport(client: client, baseURL: baseURL)
            let ok = try await transport.fetch(.match("m1"))
            #expect(ok.status == 200)
            #expect(ok.headers["etag"] == "\"v3\"")
            #expect(ok.headers["content-type"] == "application/json")
            #expect(ok.headers.keys.allSatisfy { $0 == $0.lowercased() })
            #expect(try FeedDecoding.match(try #require(ok.body)).match.id == "m1")

            let notModified = try await transport.fetch(FeedRequest(path: "/matches/m1", headers: ["if-none-match": "\"v3\""]))
            #expect(notModified.status == 304)
            #expect(notModified.body == nil)

            let missing = try await transport.fetch(.match("nope"))
            #expect(missing.status == 404)
        }
    }

    @Test func aBodyOverTheLimitIsAnError() async throws {
        try await withFeed { baseURL, client, _ in
            let transport = try HTTPFeedTransport(client: client, baseURL: baseURL, maxBodyBytes: 1024)
            let error = await #expect(throws: FeedError.self) { try await transport.fetch(.match("huge")) }
            #expect(error?.reason == "too_large")
            #expect(error?.description == "body of /matches/huge is larger than 1024 bytes")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFeedThatHangsMidBodyFailsWithinTheDeadline() async throws {
        try await withFeed { baseURL, client, _ in
            let transport = try HTTPFeedTransport(client: client, baseURL: baseURL, timeout: .milliseconds(300))
            let begin = ContinuousClock.now
            let error = await #expect(throws: FeedError.self) { try await transport.fetch(.match("stall")) }
            #expect(error?.reason == "timeout")
            #expect(error?.path == "/matches/stall")
            // The host stalls for 30 s: ending well before that proves the deadline covers the body. The margin is wide
            // because beside a thousand parallel tests the deadline's timer once fired 5 s late.
            #expect(begin.duration(to: .now) < .seconds(15), "the body's wait is bounded by the deadline too")
        }
    }

    @Test func anUnreachableFeedFailsWithinTheDeadline() async throws {
        try await withClient { client in
            // Port 1 on loopback: nothing listens there, and AsyncHTTPClient keeps retrying the connection
            // until the deadline, so this ends as a timeout (or a transport error if it gives up first).
            let transport = try HTTPFeedTransport(client: client, baseURL: "http://127.0.0.1:1", timeout: .milliseconds(300))
            let error = await #expect(throws: FeedError.self) { try await transport.fetch(.liveMatches) }
            #expect(error?.reason == "transport" || error?.reason == "timeout")
            #expect(error?.path == "/live-matches")
        }
    }

    @Test(arguments: ["ftp://feed.example", "feed.example/v1", "http://", "https://feed.example/v1?key=1", ""])
    func invalidBaseURLsAreRefused(baseURL: String) async throws {
        try await withClient { client in
            #expect {
                _ = try HTTPFeedTransport(client: client, baseURL: baseURL)
            } throws: { error in
                (error as? FeedError)?.reason == "config"
            }
        }
    }

    @Test func aBaseURLKeepsItsPathAndLosesTrailingSlashes() async throws {
        try await withClient { client in
            let transport = try HTTPFeedTransport(client: client, baseURL: "https://feed.example/v1//")
            #expect(transport.baseURL == "https://feed.example/v1")
        }
    }
}
