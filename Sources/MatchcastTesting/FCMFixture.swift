import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import _CryptoExtras

/// Service accounts, deliveries, a fake FCM and sinks for the FCM tests.
public enum FCMFixture {
    public static let projectId = "matchcast-test"
    public static let clientEmail = "firebase-adminsdk-abc12@matchcast-test.iam.gserviceaccount.com"
    public static let privateKeyId = "0123456789abcdef0123456789abcdef01234567"
    /// A registration token shaped as FCM issues them.
    public static let registrationToken = "fKz3cR9wT0e4:APA91bH" + String(repeating: "x7Q_p-Z2", count: 17)

    /// One RSA key for the process: generating 2048-bit keys is slow in a debug build, and every test needs one.
    public static let key: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// A throwaway service account key file, as the Firebase console writes it; a fresh key when `key` is nil.
    ///
    /// - Parameters:
    ///   - pkcs1: write the key as PKCS#1 (`BEGIN RSA PRIVATE KEY`) instead of Google's PKCS#8.
    ///   - changes: fields to replace (`NSNull()` removes one), for the tests of bad files.
    public static func serviceAccountJSON(
        key: _RSA.Signing.PrivateKey? = nil, tokenURI: String = "https://oauth2.googleapis.com/token", pkcs1: Bool = false,
        changes: [String: Any] = [:]
    ) throws -> Data {
        let key = try key ?? _RSA.Signing.PrivateKey(keySize: .bits2048)
        var fields: [String: Any] = [
            "type": "service_account",
            "project_id": projectId,
            "private_key_id": privateKeyId,
            "private_key": pkcs1 ? key.pemRepresentation : key.pkcs8PEMRepresentation,
            "client_email": clientEmail,
            "client_id": "109876543210987654321",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": tokenURI,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/firebase-adminsdk",
            "universe_domain": "googleapis.com",
        ]
        for (name, value) in changes {
            fields[name] = value is NSNull ? nil : value
        }
        return try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted, .sortedKeys])
    }

    /// Runs `body` with a started fake FCM for `key` and a fresh `HTTPClient`; both are stopped afterwards.
    public static func withServer<T>(
        key: _RSA.Signing.PrivateKey = FCMFixture.key, expiresIn: Int = 3599, now: @escaping @Sendable () -> Date = { Date() },
        _ body: (FakeFCMServer, HTTPClient) async throws -> T
    ) async throws -> T {
        let server = try await FakeFCMServer.start(
            publicKey: key.publicKey, clientEmail: clientEmail, projectId: projectId, expiresIn: expiresIn, now: now)
        return try await withTestHTTPClient(read: .seconds(60), stopping: server.stop) { try await body(server, $0) }
    }

    /// Runs `body` with a started fake FCM for another Firebase project, of a service account with a fresh key, and
    /// that account's key file (JSON, its `token_uri` the fake's); the fake is stopped afterwards.
    public static func withOtherProject<T>(
        projectId: String, clientEmail: String, _ body: (FakeFCMServer, _ serviceAccountJSON: Data) async throws -> T
    ) async throws -> T {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let server = try await FakeFCMServer.start(publicKey: key.publicKey, clientEmail: clientEmail, projectId: projectId)
        return try await withStopping(server, stop: { await $0.stop() }) { server in
            let account = try serviceAccountJSON(
                key: key, tokenURI: server.tokenURI, changes: ["project_id": projectId, "client_email": clientEmail])
            return try await body(server, account)
        }
    }

    /// A sink sending to `server` as `key`'s service account, with quick retries unless told otherwise; to `token`
    /// unless another `recipient` is given.
    public static func sink(
        server: FakeFCMServer, client: HTTPClient, key: _RSA.Signing.PrivateKey = FCMFixture.key,
        token: String = FCMFixture.registrationToken, recipient: FCMSinkConfiguration.Recipient? = nil,
        clock: any Clock<Duration> = InstantClock(),
        wallClock: WallClock = WallClock(), deadLetters: any DeadLetterRecorder = InMemoryDeadLetters(),
        invalidTokens: InvalidTokens = InvalidTokens(), metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        retry: RetryPolicy = RetryPolicy(maxAttempts: 5, initialBackoff: .milliseconds(100), jitter: 0),
        tokenRetry: RetryPolicy = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0),
        maxConcurrentRequests: Int = 8,
        logger: Logger = Logger(label: "test.fcm", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws -> FCMSink {
        try FCMSink(
            configuration: FCMSinkConfiguration(
                serviceAccount: .json(serviceAccountJSON(key: key, tokenURI: server.tokenURI)),
                recipient: recipient ?? .registrationToken(token), endpoint: server.url, maxConcurrentRequests: maxConcurrentRequests,
                requestTimeout: .seconds(60), retry: retry, tokenRetry: tokenRetry),
            client: client, deadLetters: deadLetters,
            onInvalidToken: { token, reason in await invalidTokens.record(token, reason) },
            clock: clock, now: wallClock.now, metricsFactory: metrics, logger: logger)
    }
}
