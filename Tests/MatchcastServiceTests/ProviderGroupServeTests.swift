import AsyncHTTPClient
import Foundation
import MatchcastTesting
import Testing

/// `serve` with a provider group from its YAML config, as a user runs it: two providers of one game on loopback ports.
@Suite("serve with a provider group", .serialized)
struct ProviderGroupServeTests {
    @Test("a followed game's polls move to the secondary while the primary fails and back after its cool-down; /readyz and /metrics show each provider",
          .timeLimit(.minutes(2)))
    func serveFailsOver() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let folder = try ScratchFolder.newFolder("provider-group")
        defer { try? FileManager.default.removeItem(at: folder) }
        let kickoff = Date().addingTimeInterval(-1800)
        let primary = try await FakeProvider.start(
            games: [.init(id: "p-1", home: "Arsenal FC", away: "Chelsea FC", startsAt: kickoff)], intervalMs: 200)
        let secondary = try await FakeProvider.start(
            games: [.init(id: "s-9", home: "Arsenal", away: "Chelsea", startsAt: kickoff)], intervalMs: 200)
        let config = folder.appendingPathComponent("matchcast.yaml")
        try """
            feeds:
              - {feed: "\(primary.baseURL)", tier: official}
              - {feed: "\(secondary.baseURL)", tier: unofficial, budget: 6000/min}
            failover:
              failuresBeforeDisable: 2
              coolDownSeconds: 2
            polling:
              defaultMs: 200
              minPollMs: 100
            """.write(to: config, atomically: true, encoding: .utf8)
        let port = try MatchcastProcess.freePort()
        let serve = try MatchcastProcess.start(binary, [
            "serve", "--port", "\(port)", "--store", "memory", "--config", config.path, "--log-level", "warning",
        ], log: folder, name: "serve")
        defer { serve.kill() }  // cleanup only: nothing is waited for
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Self.check(
                BrokerAPI(client: client, port: port), primary: primary, secondary: secondary, folder: folder)
        } catch {
            try? await client.shutdown()
            await primary.stop()
            await secondary.stop()
            throw error
        }
        try await client.shutdown()
        await primary.stop()
        await secondary.stop()
    }

    private static func check(_ api: BrokerAPI, primary: FakeProvider, secondary: FakeProvider, folder: URL) async throws {
        try await api.waitUntilHealthy()
        let day = ISO8601DateFormatter.string(from: Date().addingTimeInterval(-1800), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        let id = "game:football:\(day):arsenal-v-chelsea"
        let device = try await api.register(index: 0)
        try await #require(eventually(within: 30, every: .milliseconds(100)) {
            let (status, body) = try await api.call(.GET, "/v1/matches", bearer: device.secret)
            return status == 200 && String(decoding: body, as: UTF8.self).contains(id)
        }, "the group's live list shows one game under its canonical id\n\(MatchcastProcess.logs(folder))")
        try await api.follow(device, match: id)
        func homeScore() async throws -> String? {
            let (_, body) = try await api.call(.GET, "/v1/matches/\(id)", bearer: device.secret)
            let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            let state = object?["contentState"] as? [String: Any]
            return (state?["home"] as? [String: Any])?["score"] as? String
        }
        primary.score("p-1", home: 1, away: 0)
        secondary.score("s-9", home: 1, away: 0)
        try await #require(eventually(within: 30, every: .milliseconds(100)) { try await homeScore() == "1" },
                           "the goal shown\n\(MatchcastProcess.logs(folder))")
        #expect(primary.matchRequests > 0)

        // The primary fails: the next goal comes from the secondary, and /readyz says the primary is disabled.
        primary.set(.failing)
        primary.score("p-1", home: 2, away: 0)
        secondary.score("s-9", home: 2, away: 0)
        #expect(try await eventually(within: 10, every: .milliseconds(50)) { try await homeScore() == "2" })
        var providers: [[String: Any]] = []
        #expect(try await eventually(within: 10, every: .milliseconds(50)) {
            let (status, body) = try await api.call(.GET, "/readyz")
            let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            providers = object?["providers"] as? [[String: Any]] ?? []
            // The group still answers: ready.
            return status == 200 && providers.first?["state"] as? String == "disabled"
        }, "\(providers)")
        #expect(providers.map { $0["tier"] as? String } == ["official", "unofficial"])
        #expect(providers.last?["state"] as? String == "healthy" && providers.last?["budget"] as? String == "6000/min")
        let (_, metrics) = try await api.call(.GET, "/metrics")
        let healthy = String(decoding: metrics, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("matchcast_feed_provider_healthy{") }
        #expect(Set(healthy.map(String.init)) == [
            #"matchcast_feed_provider_healthy{provider="\#(primary.baseURL)"} 0.0"#,
            #"matchcast_feed_provider_healthy{provider="\#(secondary.baseURL)"} 1.0"#,
        ], "\(healthy)")

        // Back after its cool-down.
        primary.set(.ok)
        #expect(try await eventually(within: 20, every: .milliseconds(100)) {
            let (_, body) = try await api.call(.GET, "/readyz")
            let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            return (object?["providers"] as? [[String: Any]])?.first?["state"] as? String == "healthy"
        })
        let polled = primary.matchRequests
        #expect(try await eventually(within: 10, every: .milliseconds(100)) { primary.matchRequests > polled + 3 })
        #expect(try await homeScore() == "2")
    }
}
