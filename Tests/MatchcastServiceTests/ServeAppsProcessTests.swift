import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

/// Several apps per deployment (docs/apps.md) through the `matchcast serve` a user runs: its configuration file with an
/// `apps:` list, its HTTP API, its SQLite file, a webhook receiving its deliveries, then a restart without the app.
@Suite("serve with two apps: devices register for their app, each app's pushes carry its topic, admin keys are scoped", .serialized)
struct ServeAppsProcessTests {
    static let fantasyKey = "fantasy-admin-key"

    @Test("a device of each app follows the fake feed's match: its pushes carry its own app's topic; the app's admin key sees only its device; without the app, its device is refused",
          .timeLimit(.minutes(3)))
    func twoApps() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let folder = try ScratchFolder.newFolder("serve-apps")
        defer { try? FileManager.default.removeItem(at: folder) }
        let receiver = try await WebhookReceiver.start(secret: WebhookFixture.secret)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let feedPort = try MatchcastProcess.freePort()
        let feed = try MatchcastProcess.start(
            binary, ["fake-feed", "--port", "\(feedPort)", "--speed", "120", "--seed", "5"], log: folder, name: "feed")
        var running: [MatchcastProcess] = [feed]
        defer { for process in running { process.kill() } }  // cleanup only: nothing is waited for
        do {
            var arguments = try MatchcastProcess.sqliteServeArguments(
                in: folder, apiPort: try MatchcastProcess.freePort(), feedPort: feedPort, webhook: receiver.url,
                adminKey: CrashRecoveryTests.adminKey, coalesceSeconds: 1, pushToStartSpacingSeconds: 1)
            let config = URL(fileURLWithPath: arguments[arguments.firstIndex(of: "--config")! + 1])
            let withApps = folder.appendingPathComponent("apps.yaml")
            try (String(contentsOf: config, encoding: .utf8) + """

                bundleId: com.example.scores
                apps:
                  - id: fantasy
                    bundleId: com.example.fantasy
                    adminKey: \(Self.fantasyKey)
                """).write(to: withApps, atomically: true, encoding: .utf8)
            arguments[arguments.firstIndex(of: "--config")! + 1] = withApps.path
            let port = Int(arguments[arguments.firstIndex(of: "--port")! + 1])!
            let api = BrokerAPI(client: client, port: port)
            let serve = try MatchcastProcess.start(binary, arguments, log: folder, name: "serve-1")
            running.append(serve)
            try await api.waitUntilHealthy()
            try await #require(eventually(within: 60, every: .milliseconds(50)) { try await api.matchIsLive("football") })

            // One device of each app, each with a push-to-start token, following the same match.
            let scores = try await api.register(index: 0)
            let (status, body) = try await api.call(.POST, "/v1/devices", json: #"{"app": "fantasy"}"#)
            try #require(status == 201, "\(status) \(String(decoding: body, as: UTF8.self))")
            let registered = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: String])
            let fantasy = BrokerAPI.Device(
                id: try #require(registered["deviceId"]), secret: try #require(registered["deviceSecret"]), index: 1)
            #expect(fantasy.id.hasPrefix("fantasy:dev_") && scores.id.hasPrefix("dev_"))
            let tokens = [scores.id: MatchcastProcess.token(0xa1, 0), fantasy.id: MatchcastProcess.token(0xb1, 1)]
            for device in [scores, fantasy] {
                try await api.setPushToStartToken(device, token: tokens[device.id]!)
                try await api.follow(device, match: "football")
            }
            let topics = [scores.id: "com.example.scores.push-type.liveactivity", fantasy.id: "com.example.fantasy.push-type.liveactivity"]
            try await #require(eventually(within: 60, every: .milliseconds(50)) {
                Set(receiver.received.map(\.target.value)).isSuperset(of: Set(tokens.values))
            }, "both starts arrived\n\(MatchcastProcess.logs(folder))")
            for (device, token) in tokens {
                let pushes = receiver.received.filter { $0.target.value == token }
                #expect(!pushes.isEmpty && pushes.allSatisfy { $0.apns.topic == topics[device] }, "\(pushes.map(\.apns.topic))")
            }

            // The app's admin key: its own device, not the other app's; the deployment's key: both.
            func diagnostics(_ device: BrokerAPI.Device, key: String) async throws -> Int {
                let encoded = device.id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                return try await api.call(.GET, "/v1/admin/devices/\(encoded)/diagnostics", bearer: key).0
            }
            #expect(try await diagnostics(fantasy, key: Self.fantasyKey) == 200)
            #expect(try await diagnostics(scores, key: Self.fantasyKey) == 404)
            #expect(try await diagnostics(scores, key: CrashRecoveryTests.adminKey) == 200)
            #expect(try await diagnostics(fantasy, key: CrashRecoveryTests.adminKey) == 200)
            let (_, metrics) = try await api.call(.GET, "/metrics")
            let text = String(decoding: metrics, as: UTF8.self)
            #expect(text.contains(#"matchcast_devices_registered_total{app="fantasy"} 1"#), "\(text.prefix(200))")
            #expect(text.contains(#"matchcast_devices_registered_total{app="default"} 1"#))

            // The same database, served without the app: its device is refused, the default app's still served.
            await serve.stop()
            try (String(contentsOf: config, encoding: .utf8) + "\nbundleId: com.example.scores\n")
                .write(to: withApps, atomically: true, encoding: .utf8)
            let again = try MatchcastProcess.start(binary, arguments, log: folder, name: "serve-2")
            running.append(again)
            try await api.waitUntilHealthy()
            let refused = try await api.call(.GET, "/v1/devices/\(fantasy.id)/follows", bearer: fantasy.secret)
            #expect(refused.0 == 403, "\(String(decoding: refused.1, as: UTF8.self))")
            #expect(try await api.call(.GET, "/v1/devices/\(scores.id)/follows", bearer: scores.secret).0 == 200)
            let unknown = try await api.call(.POST, "/v1/devices", json: #"{"app": "fantasy"}"#)
            #expect(unknown.0 == 400)
        } catch {
            try? await client.shutdown()
            await receiver.stop()
            throw error
        }
        try await client.shutdown()
        await receiver.stop()
    }
}
