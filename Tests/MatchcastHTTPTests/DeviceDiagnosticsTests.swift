import Foundation
import Hummingbird
import Logging
import MatchcastTesting
import HummingbirdTesting
import MatchcastCore
import MatchcastHTTP
@testable import MatchcastService
import MatchcastStore
import Testing

/// `GET /v1/devices/{id}/diagnostics` and `GET /v1/admin/devices/{id}/diagnostics`: tokens redacted, activities and
/// refusals as the store has them, and the flags that say what needs attention.
@Suite("HTTP API: device diagnostics")
struct DeviceDiagnosticsTests {
    static let match = "epl-mun-liv"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a device sees its own diagnostics, the admin any device's; tokens never whole; refusals kept and flagged")
    func diagnosticsThroughTheAPI() async throws {
        let harness = HTTPHarness(adminKey: HTTPHarness.adminKey)
        try await harness.run { client in
            let device = try await client.register()
            let other = try await client.register()
            let path = "/v1/devices/\(device.deviceId)/diagnostics"
            var response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret,
                json: #"{"token": "\#(HTTPHarness.tokenA)", "environment": "sandbox"}"#)
            #expect(response.status == .noContent)
            response = try await client.call(.put, "/v1/devices/\(device.deviceId)/follows/\(Self.match)", bearer: device.deviceSecret)
            #expect(response.status == .ok)
            // The match goes live: the activity's start goes to the push-to-start token.
            try await harness.service.lifecycle.ingest(ManagerFixtures.football(Self.match, seq: 1), pollInterval: .seconds(10))

            response = try await client.call(.get, path, bearer: device.deviceSecret)
            #expect(response.status == .ok)
            #expect(!response.text.contains(HTTPHarness.tokenA), "a token is never shown whole")
            var diagnostics = try response.decode(DeviceDiagnostics.self)
            #expect(diagnostics.deviceId == device.deviceId)
            #expect(diagnostics.pushToStartToken?.token == "abab…abab")
            #expect(diagnostics.pushToStartToken?.environment == .sandbox)
            #expect(diagnostics.pushToStartToken?.ageSeconds == 0)
            #expect(diagnostics.follows == [Self.match])
            #expect(diagnostics.activities.map(\.phase) == ["starting"])
            #expect(diagnostics.activities.first?.startedAt == Self.now)
            #expect(diagnostics.activities.first?.attention.isEmpty == true, "just started: nothing to flag yet")
            #expect(diagnostics.refusals.isEmpty && diagnostics.attention.isEmpty)

            // Another device's secret, or none: refused. The admin key reads any device's; an unknown device is 404.
            #expect(try await client.call(.get, path, bearer: other.deviceSecret).status == .forbidden)
            #expect(try await client.call(.get, path).status == .unauthorized)
            #expect(try await client.call(.get, path, bearer: HTTPHarness.adminKey).status == .unauthorized)
            let admin = try await client.call(.get, "/v1/admin/devices/\(device.deviceId)/diagnostics", bearer: HTTPHarness.adminKey)
            #expect(admin.status == .ok)
            #expect(try admin.decode(DeviceDiagnostics.self) == diagnostics)
            #expect(try await client.call(.get, "/v1/admin/devices/\(device.deviceId)/diagnostics", bearer: device.deviceSecret)
                .status == .unauthorized)
            let unknown = try await client.call(.get, "/v1/admin/devices/dev_nobody/diagnostics", bearer: HTTPHarness.adminKey)
            #expect(unknown.status == .notFound)

            // APNs refuses the push-to-start token: the start is taken back, the token forgotten, the refusal kept.
            let feedback = #"{"token": "\#(HTTPHarness.tokenA)", "reason": "BadDeviceToken"}"#
            #expect(try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: feedback).status == .ok)
            diagnostics = try await client.call(.get, path, bearer: device.deviceSecret).decode(DeviceDiagnostics.self)
            #expect(diagnostics.pushToStartToken == nil)
            #expect(diagnostics.activities.map(\.phase) == ["waiting"])
            #expect(diagnostics.refusals.map(\.reason) == ["BadDeviceToken"])
            #expect(diagnostics.refusals.first?.kind == "pushToStart" && diagnostics.refusals.first?.token == "abab…abab")
            #expect(diagnostics.attention.map(\.code) == ["no-push-to-start-token"])

            // A new token (the start resumes once the push-to-start spacing has passed), refused again: two refusals
            // in a day are flagged.
            response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret,
                json: #"{"token": "\#(HTTPHarness.tokenB)", "environment": "sandbox"}"#)
            #expect(response.status == .noContent)
            diagnostics = try await client.call(.get, path, bearer: device.deviceSecret).decode(DeviceDiagnostics.self)
            #expect(diagnostics.pushToStartToken?.token == "cdcd…cdcd")
            #expect(diagnostics.attention.isEmpty, "one refusal, and a token again")
            let again = #"{"token": "\#(HTTPHarness.tokenB)", "reason": "Unregistered"}"#
            #expect(try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: again).status == .ok)
            diagnostics = try await client.call(.get, path, bearer: device.deviceSecret).decode(DeviceDiagnostics.self)
            #expect(diagnostics.refusals.map(\.reason) == ["Unregistered", "BadDeviceToken"])
            #expect(diagnostics.attention.map(\.code) == ["repeated-refusals", "no-push-to-start-token"])
        }
    }

    @Test("a remote start whose update token never comes is flagged after ten minutes, unless it listens on a channel")
    func startWithoutUpdateToken() async throws {
        let harness = HTTPHarness()
        let store = harness.store
        let device = try await harness.service.registerDevice()
        try await harness.service.setPushToStartToken(deviceId: device.deviceId, token: HTTPHarness.tokenA, environment: .production)
        _ = try await harness.service.follow(deviceId: device.deviceId, matchId: Self.match)
        try await harness.service.lifecycle.ingest(ManagerFixtures.football(Self.match, seq: 1), pollInterval: .seconds(10))
        let record = try #require(await store.device(id: device.deviceId))
        let token = await store.pushToStartToken(deviceId: device.deviceId)
        let follows = await store.follows(deviceId: device.deviceId)
        var activities = await store.activities(deviceId: device.deviceId)
        func flags(after minutes: Double) -> [String] {
            DeviceDiagnostics(
                device: record, token: token, follows: follows, activities: activities, refusals: [],
                now: Self.now.addingTimeInterval(minutes * 60)
            ).activities.flatMap(\.attention).map(\.code)
        }
        #expect(flags(after: 9) == [])
        #expect(flags(after: 11) == ["no-update-token"])
        // Once the app reports the update token, nothing is flagged.
        let activityId = try #require(activities.first?.activityId)
        _ = try await harness.service.putActivity(
            activityId: activityId, deviceId: device.deviceId, matchId: Self.match, updateToken: HTTPHarness.tokenB,
            environment: .production)
        activities = await store.activities(deviceId: device.deviceId)
        #expect(activities.first?.phase == .active)
        #expect(flags(after: 60) == [])
    }

    @Test("matchcast devices inspect prints a device's diagnostics from serve's admin API, and says why when it cannot",
          .timeLimit(.minutes(2)))
    func inspectCommand() async throws {
        let binary = try #require(BuiltExecutable.named("matchcast"), "matchcast is built beside the tests")
        let harness = HTTPHarness(adminKey: HTTPHarness.adminKey)
        let app = buildApplication(service: harness.service, configuration: harness.configuration,
                                   registry: harness.registry, logger: Logger(label: "test.http.inspect"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let device = try await client.register()
            _ = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret,
                json: #"{"token": "\#(HTTPHarness.tokenA)", "environment": "sandbox"}"#)
            _ = try await client.call(.put, "/v1/devices/\(device.deviceId)/follows/\(Self.match)", bearer: device.deviceSecret)
            let feedback = #"{"token": "\#(HTTPHarness.tokenA)", "reason": "BadDeviceToken"}"#
            _ = try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: feedback)
            let url = "http://127.0.0.1:\(port)"

            let text = try await MatchcastProcess.run(binary, ["devices", "inspect", device.deviceId, "--url", url, "--admin-key", HTTPHarness.adminKey])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("device \(device.deviceId)"))
            #expect(text.stdout.contains("push-to-start token: none"))
            #expect(text.stdout.contains("follows: \(Self.match)"))
            #expect(text.stdout.contains("pushToStart abab…abab: BadDeviceToken"))
            #expect(text.stdout.contains("! no-push-to-start-token"))
            #expect(!text.stdout.contains(HTTPHarness.tokenA))

            // The key from the environment, and the JSON as it came.
            let json = try await MatchcastProcess.run(
                binary, ["devices", "inspect", device.deviceId, "--url", url, "--json"],
                environment: ["MATCHCAST_ADMIN_KEY": HTTPHarness.adminKey])
            #expect(json.status == 0)
            let decoded = try JSON.decoder().decode(DeviceDiagnostics.self, from: Data(json.stdout.utf8))
            #expect(decoded.deviceId == device.deviceId && decoded.refusals.count == 1)

            let wrongKey = try await MatchcastProcess.run(binary, ["devices", "inspect", device.deviceId, "--url", url, "--admin-key", "nope"])
            #expect(wrongKey.status == 1 && wrongKey.stderr.contains("serve answered 401"))
            let unknown = try await MatchcastProcess.run(binary, ["devices", "inspect", "dev_nobody", "--url", url, "--admin-key", HTTPHarness.adminKey])
            #expect(unknown.status == 1 && unknown.stderr.contains("404") && unknown.stderr.contains("dev_nobody"))
            let noKey = try await MatchcastProcess.run(binary, ["devices", "inspect", device.deviceId, "--url", url])
            #expect(noKey.status == 2 && noKey.stderr.contains("admin key"))
        }
    }
}
