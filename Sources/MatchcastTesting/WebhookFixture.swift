import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import NIOCore

/// Deliveries, clocks, metrics and an HTTP client for the webhook tests.
public enum WebhookFixture {
    /// 24 key bytes; the receiver and sink share it.
    public static let secretText = "whsec_" + Data((0..<32).map { UInt8($0 &* 7 &+ 3) }).base64EncodedString()
    public static let secret = try! WebhookSecret(secretText)

    public static let payload: PushPayload = {
        var state = ContentState(status: "live", statusText: "Live", home: .init(name: "MI", score: "87/6 (14.2)"),
                                 away: .init(name: "CSK", score: "Yet to bat"), summary: "MI 87/6 (14.2) · RR 6.07")
        state.runRate = "RR 6.07"
        return try! PushPayload(APS(timestamp: 1_776_784_329, event: .update, contentState: state, staleDate: 1_776_784_629))
    }()

    /// `count` deliveries with ids `dlv_000000`, `dlv_000001`, … sharing one payload.
    public static func deliveries(_ count: Int, prefix: String = "dlv_") -> [Delivery] {
        (0..<count).map { index in
            let token = String(format: "%08x", index) + String(repeating: "ab", count: 28)
            return Delivery(
                id: prefix + String(format: "%06d", index), matchId: "ipl-2026-m41", activityId: "act_\(index % 7)",
                target: PushTarget(kind: .updateToken, value: token),
                apns: APNsHeaders(topic: "com.example.matchcast.push-type.liveactivity", priority: 10, expiration: 1_776_784_629),
                payload: payload)
        }
    }

    /// Runs `body` with a fresh `HTTPClient`, shut down afterwards whether `body` throws or not.
    /// AsyncHTTPClient keeps retrying a refused connection until `connectTimeout`, then reports the refusal.
    public static func withClient<T>(
        connectTimeout: Duration = .seconds(2), _ body: (HTTPClient) async throws -> T
    ) async throws -> T {
        try await withTestHTTPClient(connect: .init(connectTimeout), read: .seconds(60), body)
    }

    /// A sink posting to `url`, fast retries unless told otherwise. Its requests (and `withClient`'s reads) may take a
    /// minute: a receiver in a test process busy with the whole suite answered after more than 5 s.
    public static func sink(
        url: String, client: HTTPClient, clock: any Clock<Duration>, deadLetters: any DeadLetterRecorder = InMemoryDeadLetters(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, maxBatch: Int = 500, maxConcurrentRequests: Int = 4,
        retry: RetryPolicy = RetryPolicy(initialBackoff: .milliseconds(100), jitter: 0)
    ) throws -> WebhookSink {
        try WebhookSink(
            configuration: WebhookSinkConfiguration(
                url: url, secret: secret, maxBatch: maxBatch, maxConcurrentRequests: maxConcurrentRequests,
                requestTimeout: .seconds(60), retry: retry),
            client: client, deadLetters: deadLetters, clock: clock, metricsFactory: metrics,
            logger: Logging.Logger(label: "test.webhook", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}
