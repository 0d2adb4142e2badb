import AsyncHTTPClient
import Foundation
import Hummingbird
import MatchcastCore
import MatchcastTesting
import NIOCore
import Testing

@testable import MatchcastFeeds

/// `FakeFeedServer` on a free loopback port answers like `FakeFeed.response`.
@Suite("FakeFeedServer")
struct FakeFeedServerTests {
    /// Runs the server on port 0 for the duration of `body`, which gets the port.
    private static func withServer(_ feed: FakeFeed, _ body: @Sendable (Int) async throws -> Void) async throws {
        let server = try await LocalHTTPServer.start(name: "fake feed") { onServerRunning in
            FakeFeedServer.makeApplication(feed: feed, port: 0, onServerRunning: onServerRunning)
        }
        do {
            try await body(server.port)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private static func get(_ port: Int, _ path: String, headers: [(String, String)] = []) async throws
        -> (status: Int, headers: [String: String], body: Data)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        var fields: [String: String] = [:]
        for (name, value) in response.headers { fields[name.lowercased()] = value }
        let buffer = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), fields, Data(buffer.readableBytesView))
    }

    @Test func servesTheFeedsPathsStatusesAndHeaders() async throws {
        // Slow enough that no match moves between the requests.
        let feed = try FakeFeed(seed: 5, speed: 0.001)
        try await Self.withServer(feed) { port in
            let match = try await Self.get(port, "/matches/cricket-t20")
            let expected = feed.response(to: .match("cricket-t20"), elapsed: .zero)
            #expect(match.status == 200)
            #expect(match.body == expected.body)
            #expect(match.headers["etag"] == expected.headers["etag"])
            #expect(match.headers["content-type"] == "application/json")

            let etag = try #require(match.headers["etag"])
            let notModified = try await Self.get(port, "/matches/cricket-t20", headers: [("If-None-Match", etag)])
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)

            let list = try await Self.get(port, "/live-matches")
            #expect(list.status == 200)
            #expect(try FeedDecoding.liveMatches(list.body).matches.isEmpty)

            let schedule = try await Self.get(port, "/schedule?date=2026-04-21")
            #expect(try FeedDecoding.schedule(schedule.body).matches.map(\.id) == FakeFeed.scenarioNames)

            let missing = try await Self.get(port, "/matches/nope")
            #expect(missing.status == 404)
            #expect(missing.headers["content-type"] == "application/json")
        }
    }
}
