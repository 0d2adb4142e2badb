import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MatchcastHTTP
import MatchcastService
import Testing

@Suite("HTTP API over a real socket")
struct HTTPLiveServerTests {
    @Test("buildApplication serves the API on a port: register, follow, a too-large body, an unknown route")
    func live() async throws {
        let harness = HTTPHarness(maxBodyBytes: 1024)
        let app = buildApplication(service: harness.service, configuration: harness.configuration,
                                   registry: harness.registry, logger: Logger(label: "test.http.live"))
        try await app.test(.live) { client in
            let device = try await client.register()
            let follow = try await client.call(.put, "/v1/devices/\(device.deviceId)/follows/m1", bearer: device.deviceSecret)
            #expect(follow.status == .ok)
            let big = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret,
                json: String(repeating: " ", count: 100_000))
            #expect(big.status == .contentTooLarge)
            #expect(big.apiError?.code == "content_too_large")
            // The connection still serves requests after refusing a body.
            let unknown = try await client.call(.get, "/nope")
            #expect(unknown.status == .notFound)
            #expect(unknown.apiError?.code == "not_found")
            let health = try await client.call(.get, "/healthz")
            #expect(health.status == .ok)
        }
    }
}
