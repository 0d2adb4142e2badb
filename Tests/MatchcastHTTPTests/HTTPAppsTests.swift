import Foundation
import HummingbirdTesting
import MatchcastCore
import MatchcastHTTP
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// Several apps per deployment (docs/apps.md) at the API: a device registers for its app, and an app's scoped admin
/// key sees and changes only that app's devices, tokens and dead letters, as if the others did not exist.
@Suite("HTTP API: devices of several apps, and admin keys scoped to one app")
struct HTTPAppsTests {
    static let fantasy = AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy")
    static let fantasyKey = "fantasy-admin-key-for-tests"

    static func harness(adminKey: String? = HTTPHarness.adminKey) -> HTTPHarness {
        HTTPHarness(adminKey: adminKey, otherApps: [fantasy], appAdminKeys: ["fantasy": fantasyKey])
    }

    @Test("POST /v1/devices registers for the app its body names (none: the default app); an unknown app or a bad body is 400")
    func registerForAnApp() async throws {
        let http = Self.harness()
        try await http.run { client in
            let plain = try await client.register()
            #expect(plain.deviceId.hasPrefix("dev_"))
            let response = try await client.call(.post, "/v1/devices", json: #"{"app": "fantasy"}"#)
            #expect(response.status == .created)
            let fantasy = try response.decode(DeviceRegistration.self)
            #expect(fantasy.deviceId.hasPrefix("fantasy:dev_") && fantasy.deviceSecret.hasPrefix(fantasy.deviceId + "."))
            let explicit = try await client.call(.post, "/v1/devices", json: #"{"app": "default"}"#)
            #expect(try explicit.decode(DeviceRegistration.self).deviceId.hasPrefix("dev_"))

            // The new device works as any other: it follows with its secret; its path id has the app in it.
            let path = "/v1/devices/\(fantasy.deviceId.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)/follows/epl-1"
            #expect(try await client.call(.put, path, bearer: fantasy.deviceSecret).status == .ok)
            #expect(await http.store.follows(deviceId: fantasy.deviceId).map(\.matchId) == ["epl-1"])

            let unknown = try await client.call(.post, "/v1/devices", json: #"{"app": "nope"}"#)
            #expect(unknown.status == .badRequest)
            #expect(unknown.text.contains("no app 'nope'") && unknown.text.contains("default, fantasy"), "\(unknown.text)")
            #expect(try await client.call(.post, "/v1/devices", json: #"{"app": 5}"#).status == .badRequest)
            #expect(try await client.call(.post, "/v1/devices", json: "not json").status == .badRequest)
        }
    }

    @Test("an app's admin key reads its own devices' diagnostics; another app's device is not found to it; the deployment key sees both")
    func scopedDiagnostics() async throws {
        let http = Self.harness()
        let plain = try await http.service.registerDevice()
        let fantasy = try await http.service.registerDevice(app: "fantasy")
        try await http.run { client in
            func diagnostics(_ device: String, _ key: String) async throws -> TestResponse {
                try await client.call(.get, "/v1/admin/devices/\(device)/diagnostics", bearer: key)
            }
            let own = try await diagnostics(fantasy.deviceId, Self.fantasyKey)
            #expect(own.status == .ok)
            #expect(try own.decode(DeviceDiagnostics.self).app == "fantasy")
            #expect(try await diagnostics(plain.deviceId, Self.fantasyKey).status == .notFound)
            #expect(try await diagnostics(plain.deviceId, HTTPHarness.adminKey).status == .ok)
            #expect(try await diagnostics(fantasy.deviceId, HTTPHarness.adminKey).status == .ok)
            #expect(try await diagnostics(fantasy.deviceId, "fantasy-admin-key-for-test").status == .unauthorized)
            // Read-only calls open to the operator take an app's key too.
            #expect(try await client.call(.get, "/v1/matches", bearer: Self.fantasyKey).status == .ok)
        }
    }

    @Test("an app's admin key lists only dead letters to its app's devices (by their topic); the deployment key lists all")
    func scopedDeadLetters() async throws {
        let http = Self.harness()
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        func letter(_ id: String, topic: String) -> DeadLetter {
            var delivery = APNsFixture.deliveries(1, prefix: id)[0]
            delivery.apns.topic = topic
            return DeadLetter(delivery: delivery, sink: "apns", status: 400, reason: "BadDeviceToken", recordedAt: at)
        }
        let fantasyTopic = Self.fantasy.topic
        let defaultTopic = BrokerSettings().apps.defaultApp.topic
        await http.store.recordDeadLetters([
            letter("dlv_a", topic: defaultTopic), letter("dlv_b", topic: fantasyTopic), letter("dlv_c", topic: defaultTopic),
            letter("dlv_d", topic: fantasyTopic),
        ])
        try await http.run { client in
            let scoped = try await Self.deadLetterIds(client, key: Self.fantasyKey)
            #expect(scoped == ["dlv_b000000", "dlv_d000000"])
            let one = try await Self.deadLetterIds(client, key: Self.fantasyKey, limit: 1)
            #expect(one.count == 1)
            let all = try await Self.deadLetterIds(client, key: HTTPHarness.adminKey)
            #expect(all == ["dlv_a000000", "dlv_b000000", "dlv_c000000", "dlv_d000000"])
        }
    }

    /// The ids of the dead letters `GET /v1/admin/dead-letters` lists to `key`, sorted.
    static func deadLetterIds(_ client: any TestClientProtocol, key: String, limit: Int = 100) async throws -> [String] {
        let response = try await client.call(.get, "/v1/admin/dead-letters?limit=\(limit)", bearer: key)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])
        let letters = try #require(object["deadLetters"] as? [[String: Any]])
        return letters.compactMap { ($0["delivery"] as? [String: Any])?["id"] as? String }.sorted()
    }

    @Test("feedback with an app's admin key forgets its own devices' dead tokens and leaves another app's alone, as unknown")
    func scopedFeedback() async throws {
        let http = Self.harness(adminKey: nil)
        let plain = try await http.service.registerDevice()
        let fantasy = try await http.service.registerDevice(app: "fantasy")
        try await http.service.setPushToStartToken(deviceId: plain.deviceId, token: HTTPHarness.tokenA, environment: .production)
        try await http.service.setPushToStartToken(deviceId: fantasy.deviceId, token: HTTPHarness.tokenB, environment: .production)
        try await http.run { client in
            func report(_ token: String) async throws -> Bool? {
                let response = try await client.call(
                    .post, "/v1/feedback", bearer: Self.fantasyKey, json: #"{"token": "\#(token)", "reason": "Unregistered"}"#)
                #expect(response.status == .ok)
                let object = try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any]
                return object?["invalidated"] as? Bool
            }
            #expect(try await report(HTTPHarness.tokenA) == false)
            #expect(await http.store.pushToStartToken(deviceId: plain.deviceId)?.token == HTTPHarness.tokenA)
            #expect(try await report(HTTPHarness.tokenB) == true)
            #expect(await http.store.pushToStartToken(deviceId: fantasy.deviceId) == nil)
            // With no deployment key configured, only the app's key opens admin calls.
            let denied = try await client.call(
                .post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: #"{"token": "\#(HTTPHarness.tokenA)", "reason": "x"}"#)
            #expect(denied.status == .unauthorized)
        }
    }

    @Test("a device of an app no longer served is refused (403), not sent to with another app's keys")
    func appNoLongerServed() async throws {
        let before = Self.harness()
        let fantasy = try await before.service.registerDevice(app: "fantasy")
        // The same store under a configuration without the app.
        let service = LiveActivityService(store: before.store, lifecycle: before.service.lifecycle)
        let error = await #expect(throws: ServiceError.self) { _ = try await service.authenticateDevice(secret: fantasy.deviceSecret) }
        #expect(error?.code == .forbidden && "\(String(describing: error))".contains("app 'fantasy' is no longer served"))
        #expect(try await before.service.authenticateDevice(secret: fantasy.deviceSecret) == fantasy.deviceId)
    }
}
