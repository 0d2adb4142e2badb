import AsyncHTTPClient
import CoreMetrics
import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery

/// Keys, deliveries, clocks and a fake APNs for the APNs tests.
public enum APNsFixture {
    public static let keyId = "ABC123DEFG"
    public static let teamId = "DEF123GHIJ"
    public static let topic = "com.example.matchcast.push-type.liveactivity"

    /// A fresh signing key and the credentials around it.
    public static func credentials() throws -> (key: P256.Signing.PrivateKey, credentials: APNsCredentials) {
        let key = P256.Signing.PrivateKey()
        return (key, try APNsCredentials(privateKey: key, keyId: keyId, teamId: teamId))
    }

    public static func payload(summary: String = "MI 87/6 (14.2) · RR 6.07", timestamp: Int = 1_776_784_329) -> PushPayload {
        var state = ContentState(status: "live", statusText: "Live", home: .init(name: "MI", score: "87/6 (14.2)"),
                                 away: .init(name: "CSK", score: "Yet to bat"), summary: summary)
        state.runRate = "RR 6.07"
        return try! PushPayload(APS(timestamp: timestamp, event: .update, contentState: state, staleDate: timestamp + 300))
    }

    /// A 64-hex-digit device token, distinct per index.
    public static func token(_ index: Int) -> String {
        String(format: "%08x", index) + String(repeating: "c0ffee", count: 9) + "42"
    }

    /// `count` deliveries to tokens `token(0)`, `token(1)`, …, sharing `payload`.
    public static func deliveries(_ count: Int, payload: PushPayload = payload(), prefix: String = "dlv_", priority: Int = 10) -> [Delivery] {
        (0..<count).map { index in
            Delivery(
                id: prefix + String(format: "%06d", index), matchId: "ipl-2026-m41", activityId: "act_\(index)",
                target: PushTarget(kind: .updateToken, value: token(index)),
                apns: APNsHeaders(topic: topic, priority: priority, expiration: 1_776_784_629),
                payload: payload)
        }
    }

    /// Runs `body` with a started fake APNs trusting `key`'s public half and a fresh `HTTPClient`
    /// (default configuration: HTTP/2 by ALPN allowed); both are stopped afterwards.
    ///
    /// Timeouts are generous: on a loaded two-core machine running other suites, a debug-build TLS
    /// handshake on loopback has been seen to take over two seconds.
    public static func withServer<T>(
        key: P256.Signing.PrivateKey, now: @escaping @Sendable () -> Date = { Date() }, maxConcurrentStreams: Int = 1000,
        receiveWindow: Int? = nil, _ body: (FakeAPNsServer, HTTPClient) async throws -> T
    ) async throws -> T {
        let server = try await FakeAPNsServer.start(
            publicKey: key.publicKey, keyId: keyId, teamId: teamId, now: now, maxConcurrentStreams: maxConcurrentStreams,
            receiveWindow: receiveWindow)
        return try await withTestHTTPClient(read: .seconds(15), stopping: server.stop) { try await body(server, $0) }
    }

    /// A sink sending to `server`, trusting its CA, with fast retries unless told otherwise.
    public static func sink(
        server: FakeAPNsServer, client: HTTPClient, key: P256.Signing.PrivateKey,
        trustRoots: APNsSinkConfiguration.TrustRoots? = nil,
        clock: any Clock<Duration> = InstantClock(), wallClock: WallClock = WallClock(),
        invalidTokens: InvalidTokens = InvalidTokens(), deadLetters: any DeadLetterRecorder = InMemoryDeadLetters(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        retry: RetryPolicy = RetryPolicy(maxAttempts: 5, initialBackoff: .milliseconds(100), jitter: 0),
        requestTimeout: Duration = .seconds(15),
        connectTimeout: Duration = .seconds(15),
        maxConnections: Int = 4,
        endpoint: String? = nil,
        logger: Logger = Logger(label: "test.apns", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws -> APNsSink {
        try APNsSink(
            configuration: APNsSinkConfiguration(
                key: .pem(key.pemRepresentation), keyId: keyId, teamId: teamId, environment: .sandbox,
                endpoint: endpoint ?? server.url, trustRoots: trustRoots ?? .pem(server.certificates.caPEM),
                requestTimeout: requestTimeout, retry: retry, maxConnections: maxConnections, connectTimeout: connectTimeout),
            client: client, deadLetters: deadLetters,
            onInvalidToken: { token, reason in await invalidTokens.record(token, reason) },
            clock: clock, now: wallClock.now, metricsFactory: metrics, logger: logger)
    }

    /// The parts of a JWT, decoded.
    public static func decode(jwt: String) throws -> (header: [String: Any], claims: [String: Any], signature: [UInt8], signingInput: String) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
              let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let headerObject = try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              let claimsObject = try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]
        else { throw JWTShapeError() }
        return (headerObject, claimsObject, signature, parts[0] + "." + parts[1])
    }

    public struct JWTShapeError: Error {}
}
