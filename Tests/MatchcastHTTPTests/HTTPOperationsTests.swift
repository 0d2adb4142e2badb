import Foundation
import Hummingbird
import HummingbirdTesting
import MatchcastHTTP
import Testing

@Suite("HTTP API: health, readiness, metrics")
struct HTTPOperationsTests {
    @Test("GET /healthz is 200 {\"status\":\"ok\"} without credentials")
    func health() async throws {
        try await HTTPHarness().run { client in
            let response = try await client.call(.get, "/healthz")
            #expect(response.status == .ok)
            #expect(response.isJSON)
            #expect(response.text == #"{"status":"ok"}"#)
        }
    }

    @Test("GET /readyz is 200 when store and feed are reachable, 503 with the Readiness JSON when not; sinks shown")
    func readiness() async throws {
        try await HTTPHarness(feedReachable: true).run { client in
            let response = try await client.call(.get, "/readyz")
            #expect(response.status == .ok)
            #expect(response.text == #"{"feed":true,"ready":true,"sinks":true,"store":true}"#)
        }
        // A sink that cannot reach its destination is shown, but the API stays in rotation.
        try await HTTPHarness(sinksHealthy: false).run { client in
            let response = try await client.call(.get, "/readyz")
            #expect(response.status == .ok)
            #expect(response.text == #"{"feed":true,"ready":true,"sinks":false,"store":true}"#)
        }
        try await HTTPHarness(feedReachable: false).run { client in
            let response = try await client.call(.get, "/readyz")
            #expect(response.status == .serviceUnavailable)
            #expect(response.isJSON)
            #expect(response.text == #"{"feed":false,"ready":false,"sinks":true,"store":true}"#)
        }
    }

    @Test("GET /metrics is Prometheus text counting requests by route template, method and status")
    func metrics() async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            _ = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows", bearer: device.deviceSecret)
            _ = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows")
            _ = try await client.call(.get, "/no/such/route")
            let response = try await client.call(.get, "/metrics")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = response.text
            #expect(text.contains("# TYPE matchcast_http_requests_total counter"))
            #expect(text.contains(#"matchcast_http_requests_total{route="/v1/devices",method="POST",status="201"} 1"#))
            #expect(text.contains(#"matchcast_http_requests_total{route="/v1/devices/{deviceId}/follows",method="GET",status="200"} 1"#))
            #expect(text.contains(#"matchcast_http_requests_total{route="/v1/devices/{deviceId}/follows",method="GET",status="401"} 1"#))
            #expect(text.contains(#"matchcast_http_requests_total{route="unmatched",method="GET",status="404"} 1"#))
            #expect(text.contains("matchcast_http_request_duration_seconds_bucket"))
            // Ids never become label values.
            #expect(!text.contains(device.deviceId))
        }
    }
}
