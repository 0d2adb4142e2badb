import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// A broker polling two feeds on two hosts (two real HTTP servers, each its own connection pool), in real time as
/// serve runs it: each live list and each match goes to its own feed, and a host that hangs delays only its own.
@Suite("several feeds: a host that hangs delays only its own matches", .serialized)
struct SeveralFeedsTests {
    /// A native v1 feed: its live list shows `matches`, each answered with `retryAfterMs` 100; every request is timed.
    /// While `hanging`, every request waits without an answer.
    final class Feed: Sendable {
        let matches: [String]
        private let state = Mutex<(hanging: Bool, polls: [String: [ContinuousClock.Instant]])>((false, [:]))

        init(_ matches: [String]) { self.matches = matches }

        var hanging: Bool {
            get { state.withLock { $0.hanging } }
            set { state.withLock { $0.hanging = newValue } }
        }

        func polls(_ matchId: String) -> [ContinuousClock.Instant] { state.withLock { $0.polls[matchId] ?? [] } }

        static func snapshot(_ id: String) -> String {
            """
            {"id": "\(id)", "sport": "football", "status": "live", "seq": 1, \
            "home": {"id": "h", "name": "Home FC"}, "away": {"id": "a", "name": "Away FC"}, \
            "score": {"home": 0, "away": 0, "period": "1H", "clock": "10'"}}
            """
        }

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.get("/live-matches") { _, _ -> Response in
                try await self.waitWhileHanging()
                let body = #"{"retryAfterMs": 100, "generatedAt": "2026-04-21T15:12:09Z", "matches": ["#
                    + self.matches.map(Self.snapshot).joined(separator: ", ") + "]}"
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            router.get("/matches/:id") { _, context -> Response in
                let id = context.parameters.get("id") ?? ""
                let hanging = self.state.withLock { state in
                    if !state.hanging, self.matches.contains(id) { state.polls[id, default: []].append(.now) }
                    return state.hanging
                }
                if hanging { try await self.waitWhileHanging() }
                guard self.matches.contains(id) else { return Response(status: .notFound) }
                let body = #"{"retryAfterMs": 100, "match": "# + Self.snapshot(id) + "}"
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            return router
        }

        /// A hanging host: no answer until it stops hanging (the client's deadline ends the request first).
        private func waitWhileHanging() async throws {
            while hanging { try await Task.sleep(for: .milliseconds(20)) }
        }
    }

    static let interval = Duration.milliseconds(100)
    /// How long the broker waits for a feed's answer.
    static let feedTimeout = Duration.seconds(5)

    @Test("each feed's matches are polled from it; while one host hangs, the other's polls keep their interval; /readyz names the one down",
          .timeLimit(.minutes(2)))
    func aHangingHostDelaysOnlyItsOwnMatches() async throws {
        let quiet = Logger(label: "test.several-feeds", factory: { _ in SwiftLogNoOpLogHandler() })
        let (north, south) = (Feed(["north-1"]), Feed(["south-1"]))
        let northServer = try await LocalHTTPServer.start(name: "north", stopTimeout: .seconds(1)) { onServerRunning in
            Application(router: north.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: onServerRunning, logger: quiet)
        }
        let southServer = try await LocalHTTPServer.start(name: "south", stopTimeout: .seconds(1)) { onServerRunning in
            Application(router: south.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                        onServerRunning: onServerRunning, logger: quiet)
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let feeds = FeedRouter(members: [
            .init(name: "north", idPrefix: nil, transport: try HTTPFeedTransport(
                client: client, baseURL: "http://127.0.0.1:\(northServer.port)", timeout: Self.feedTimeout)),
            .init(name: "south", idPrefix: nil, transport: try HTTPFeedTransport(
                client: client, baseURL: "http://127.0.0.1:\(southServer.port)", timeout: Self.feedTimeout)),
        ])
        let broker = Broker(
            store: InMemoryStore(), feeds: feeds, sinks: [CapturingSink()],
            settings: BrokerSettings(activityPolicy: ActivityPolicy(), seed: 1),
            timing: PollTimingPolicy(defaultInterval: Self.interval, minInterval: Self.interval, maxInterval: Self.interval,
                                     jitter: 0, backoffBase: Self.interval, backoffCap: Self.interval),
            clock: EventLoopClock(), now: { Date() }, logger: quiet)
        let running = RunningServices(broker.services, logger: quiet)
        let service = broker.service

        let device = try await service.registerDevice()
        _ = try await service.follow(deviceId: device.deviceId, matchId: "north-1")
        _ = try await service.follow(deviceId: device.deviceId, matchId: "south-1")
        #expect(try await eventually(within: 20) { north.polls("north-1").count >= 3 && south.polls("south-1").count >= 3 })
        #expect(feeds.member(serving: "north-1") == 0 && feeds.member(serving: "south-1") == 1)
        #expect(await service.readiness().feeds == ["north": true, "south": true])

        // North hangs for longer than a request may wait: south's match is polled on, at its interval.
        north.hanging = true
        let hungAt = ContinuousClock.now
        let before = south.polls("south-1").count
        try await Task.sleep(for: Self.feedTimeout + .seconds(1))
        let during = south.polls("south-1").filter { $0 >= hungAt }
        // Every 100 ms (60 polls); waiting on north would leave at most two, 5 s apart. This suite runs on its own after
        // the parallel tests (`Scripts/test`): beside them, its polls waited behind hundreds of other tests' work.
        #expect(south.polls("south-1").count - before >= 6, "south polled \(south.polls("south-1").count - before) times in 6 s")
        let gaps = zip(during, during.dropFirst()).map { $0.0.duration(to: $0.1) }
        #expect(gaps.allSatisfy { $0 < .milliseconds(2500) }, "south's longest gap: \(gaps.max() ?? .zero)")

        // North's polls timed out: /readyz says which feed is down.
        #expect(try await eventually(within: 20) { await service.readiness().feeds["north"] == false })
        let readiness = await service.readiness()
        #expect(readiness.feeds["south"] == true)
        #expect(!readiness.feed && !readiness.ready)

        // North answers again: its match is polled again and it is reachable again.
        north.hanging = false
        let northBefore = north.polls("north-1").count
        #expect(try await eventually(within: 30) { north.polls("north-1").count > northBefore })
        #expect(try await eventually(within: 30) { await service.readiness().ready })

        try await running.stop()
        try await client.shutdown()
        await northServer.stop()
        await southServer.stop()
    }

    @Test("serve --feed twice: the fake feed's matches are served while the other feed is down, and /readyz names each feed",
          .timeLimit(.minutes(2)))
    func serveWithTwoFeeds() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let folder = try ScratchFolder.newFolder("several-feeds")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (apiPort, deadPort) = (try MatchcastProcess.freePort(), try MatchcastProcess.freePort())
        let deadFeed = "http://127.0.0.1:\(deadPort)"
        let serve = try MatchcastProcess.start(binary, [
            "serve", "--port", "\(apiPort)", "--store", "memory", "--feed", "fake?speed=60", "--feed", deadFeed,
            "--log-level", "warning",
        ], log: folder, name: "serve")
        defer { serve.kill() }  // cleanup only: nothing is waited for
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Self.checkTwoFeeds(BrokerAPI(client: client, port: apiPort), deadFeed: deadFeed, folder: folder)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    private static func checkTwoFeeds(_ api: BrokerAPI, deadFeed: String, folder: URL) async throws {
        try await api.waitUntilHealthy()

        // The fake feed's live list is polled although the other feed refuses every connection (each refused request
        // is retried by the HTTP client until its 10 s deadline).
        let device = try await api.register(index: 0)
        try await #require(eventually(within: 30, every: .milliseconds(100)) {
            let (status, body) = try await api.call(.GET, "/v1/matches", bearer: device.secret)
            return status == 200 && String(decoding: body, as: UTF8.self).contains("cricket-t20")
        }, "the fake feed's matches listed\n\(MatchcastProcess.logs(folder))")
        var readiness: [String: Any] = [:]
        _ = try await eventually(within: 30, every: .milliseconds(100)) {
            let (_, body) = try await api.call(.GET, "/readyz")
            readiness = (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
            return (readiness["feeds"] as? [String: Bool])?[deadFeed] == false
        }
        #expect(readiness["feeds"] as? [String: Bool] == ["fake": true, deadFeed: false], "\(readiness)")
        #expect(readiness["feed"] as? Bool == false && readiness["ready"] as? Bool == false)
        // The same per feed in /metrics, for an alert on one feed among several.
        let (_, metrics) = try await api.call(.GET, "/metrics")
        let reachable = String(decoding: metrics, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("matchcast_feed_reachable{") }
        #expect(Set(reachable.map(String.init)) == [
            #"matchcast_feed_reachable{feed="fake"} 1.0"#, #"matchcast_feed_reachable{feed="\#(deadFeed)"} 0.0"#,
        ], "\(reachable)")
    }
}
