import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

/// `matchcast serve` on a PostgreSQL server of the test's own (`Scripts/postgres` with a folder of its own), with a
/// live match and followers, when the database goes away mid-match (`Scripts/postgres pause`,
/// the server stopped for 30 s, as in a restart or a partition) and comes back: the API answers 503 with `Retry-After` while
/// the store is gone, serve resumes by itself, every activity gets updates after the outage and its end, nothing
/// starts twice.
@Suite("PostgreSQL goes away mid-match and comes back", .serialized)
struct DatabaseOutageTests {
    static let followers = 12
    static let match = "football"
    /// How long the database stays away.
    static let outage = Duration.seconds(30)

    @Test(
        "the database stops for seconds mid-match: 503 with Retry-After meanwhile, then everything resumes, nothing lost or doubled",
        .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage),
        .timeLimit(.minutes(10)))
    func databaseOutage() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-outage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = URL(fileURLWithPath: "/tmp/matchcast-outage-\(UInt32.random(in: 0...UInt32.max))")
        let url = try await PostgresScript.run("start", folder: cluster)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        // At 60× a football match lasts under two minutes: the outage falls in its middle.
        let feedPort = try MatchcastProcess.freePort()
        let feed = try MatchcastProcess.start(
            binary, ["fake-feed", "--port", "\(feedPort)", "--speed", "60", "--seed", "5"], log: directory, name: "feed")
        let config = directory.appendingPathComponent("matchcast.yaml")
        try """
            polling:
              minPollMs: 100
            activities:
              coalesceSeconds: 1
              pushToStartSpacingSeconds: 1
            """.write(to: config, atomically: true, encoding: .utf8)
        var replica: BrokerReplica?
        func cleanUp() async {
            await replica?.stop()
            await feed.stop()
            try? await client.shutdown()
            _ = try? await PostgresScript.run("stop", folder: cluster)
        }
        do {
            let serve = try await BrokerReplica.start(
                binary, name: "serve",
                arguments: ["--config", config.path, "--store", url, "--feed", "http://127.0.0.1:\(feedPort)",
                            "--admin-key", CrashRecoveryTests.adminKey],
                client: client, log: directory)
            replica = serve
            try await serve.waitUntilHealthy()
            try await #require(eventually(within: 90, every: .milliseconds(50)) { try await serve.api.matchIsLive(Self.match) },
                               "the match is live")
            var devices: [BrokerAPI.Device] = []
            for index in 0..<Self.followers {
                let device = try await serve.api.register(index: index)
                try await serve.api.setPushToStartToken(device, token: MatchcastProcess.token(0xaa, index))
                try await serve.api.follow(device, match: Self.match)
                devices.append(device)
            }
            var activities: [String: BrokerAPI.Device] = [:]
            try await #require(eventually(within: 60, every: .milliseconds(50)) {
                for start in serve.receiver.received where start.payload.aps.event == .start && activities[start.activityId] == nil {
                    guard let device = devices.first(where: { MatchcastProcess.token(0xaa, $0.index) == start.target.value }) else { continue }
                    try await serve.api.putActivity(
                        start.activityId, device: device, match: Self.match, updateToken: MatchcastProcess.token(0xbb, device.index))
                    activities[start.activityId] = device
                }
                return activities.count == Self.followers
            }, "every follower's activity started")

            // The database goes away.
            try await PostgresScript.run("pause", folder: cluster)
            let pausedAt = ContinuousClock.now
            // Answered at once, not after the pool's 30 s wait for a connection it cannot make: an app gives up sooner.
            var unavailable: HTTPClientResponse?
            var slowest = Duration.zero
            _ = try await eventually(within: 20, every: .milliseconds(200)) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(serve.api.port)/v1/devices")
                request.method = .POST
                let sent = ContinuousClock.now
                let response = try await client.execute(request, timeout: .seconds(60))
                _ = try await response.body.collect(upTo: 1 << 16)
                slowest = max(slowest, ContinuousClock.now - sent)
                if response.status.code == 503 { unavailable = response }
                return unavailable != nil
            }
            let refused = try #require(unavailable, "a registration while the database is away is answered 503")
            #expect(refused.headers.first(name: "retry-after") == "2")
            #expect(slowest < .seconds(10), "a call while the database was away took \(slowest)")
            let readySent = ContinuousClock.now
            let (readyStatus, _) = try await serve.api.call(.GET, "/readyz")
            #expect(readyStatus == 503, "not ready while the store is away")
            #expect(ContinuousClock.now - readySent < .seconds(10), "readiness answers while the database is away")
            let left = Self.outage - (ContinuousClock.now - pausedAt)
            if left > .zero { try await Task.sleep(for: left) }
            #expect(serve.process.isRunning, "serve outlives the outage")
            let receivedAtResume = serve.receiver.received.count
            try await PostgresScript.run("resume", folder: cluster)

            // Back by itself: ready, registrations work, every activity is brought up to date and ends.
            try await #require(eventually(within: 60, every: .milliseconds(100)) {
                (try? await serve.api.call(.GET, "/readyz"))?.0 == 200
            }, "ready again after the database came back")
            _ = try await serve.api.register(index: 99)
            let everyEnd = try await eventually(within: 300, every: .milliseconds(100)) {
                Set(serve.receiver.received.filter { $0.payload.aps.event == .end }.map(\.activityId))
                    .isSuperset(of: activities.keys)
            }
            #expect(everyEnd, "every activity got its end")
            let afterResume = serve.receiver.received.dropFirst(receivedAtResume)
            let updated = Set(afterResume.filter { $0.payload.aps.event == .update }.map(\.activityId))
            #expect(updated.isSuperset(of: activities.keys), "updates after the outage for \(updated.count) of \(activities.count)")
            let starts = serve.receiver.received.filter { $0.payload.aps.event == .start }
            #expect(Set(starts.map(\.activityId)) == Set(activities.keys), "a start for an activity nobody registered")
            let doubled = Dictionary(grouping: starts, by: \.activityId).filter { Set($0.value.map(\.id)).count > 1 }
            #expect(doubled.isEmpty, "\(doubled.count) activities got two different starts")
            print("database-outage: \(Self.outage) without PostgreSQL; API calls meanwhile answered within \(slowest); "
                + "\(serve.receiver.received.count) deliveries, \(afterResume.count) after it came back, \(activities.count) "
                + "activities, every one ended: \(everyEnd)")
        } catch {
            print(MatchcastProcess.logs(directory, lines: 300))
            await cleanUp()
            throw error
        }
        await cleanUp()
    }
}
