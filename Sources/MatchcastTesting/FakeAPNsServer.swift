import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL

/// A fake APNs on `127.0.0.1` (a free port) for tests: TLS with a throwaway certificate
/// (`TestCertificates`), HTTP/2 by ALPN, and the checks APNs makes on a Live Activity push.
///
/// Every request is checked (see `FakeAPNsServer+Checks.swift`): `POST /3/device/<hex>` over HTTP/2,
/// `apns-push-type: liveactivity`, an `apns-topic` ending in `.push-type.liveactivity`,
/// `apns-priority` 5 or 10, a UUID `apns-id`, a body of at most 4096 bytes that is a JSON object with
/// `aps`, and an `authorization: bearer` JWT whose ES256 signature verifies with the public key
/// given, whose `kid` and `iss` match, and whose `iat` is within an hour. A request failing a check
/// is answered as APNs would (e.g. 403 `InvalidProviderToken`); one passing them meets any fault a
/// test queued, or is accepted: recorded in `accepted` and answered 200.
///
/// ```swift
/// let server = try await FakeAPNsServer.start(publicKey: credentials.publicKey, keyId: "ABC123DEFG", teamId: "DEF123GHIJ")
/// server.fail(token: token, with: .unregistered)
/// ... // send to server.url, trusting server.certificates.caPEM
/// await server.stop()
/// ```
public final class FakeAPNsServer: Sendable {
    /// An error answer a test can ask for.
    public enum Failure: String, Sendable, Hashable, CaseIterable {
        /// 410: the token is no longer valid.
        case unregistered = "Unregistered"
        /// 400: the token is malformed or from the other environment.
        case badDeviceToken = "BadDeviceToken"
        /// 400: the token belongs to another app.
        case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
        /// 429: too many pushes to this token.
        case tooManyRequests = "TooManyRequests"
        /// 403: the provider token is too old.
        case expiredProviderToken = "ExpiredProviderToken"
        /// 500.
        case internalServerError = "InternalServerError"
        /// 503.
        case serviceUnavailable = "ServiceUnavailable"

        /// The HTTP status APNs answers with.
        public var status: Int {
            switch self {
            case .unregistered: 410
            case .badDeviceToken, .deviceTokenNotForTopic: 400
            case .tooManyRequests: 429
            case .expiredProviderToken: 403
            case .internalServerError: 500
            case .serviceUnavailable: 503
            }
        }

        /// The `reason` of the JSON error body.
        public var reason: String { rawValue }
    }

    /// One notification the fake accepted.
    public struct Notification: Sendable, Hashable {
        /// The device token from the path.
        public var token: String
        public var pushType: String
        public var topic: String
        public var priority: Int
        /// `apns-expiration`, if sent.
        public var expiration: Int?
        public var apnsID: String
        /// The provider token (the JWT after `bearer `).
        public var providerToken: String
        /// Its `iat` claim.
        public var issuedAt: Int64
        /// The body, byte for byte.
        public var body: [UInt8]
        /// `2` for HTTP/2, `1.1` otherwise (which the fake refuses, so accepted ones are all `2`).
        public var httpVersion: String
    }

    /// One request as the fake saw it, whatever became of it.
    public struct Exchange: Sendable, Hashable {
        /// The token from the path, if the path had one.
        public var token: String?
        public var apnsID: String?
        /// The provider token, if one was sent.
        public var providerToken: String?
        public var status: Int
        /// The error reason, nil for 200.
        public var reason: String?
    }

    /// The port the server listens on.
    public let port: Int
    /// The certificates the server presents; a client must trust `caPEM`.
    public let certificates: TestCertificates
    let state: SharedState
    private let server: Task<Void, any Error>

    private init(port: Int, certificates: TestCertificates, state: SharedState, server: Task<Void, any Error>) {
        self.port = port
        self.certificates = certificates
        self.state = state
        self.server = server
    }

    /// The endpoint to send to (no path).
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Starts a fake APNs that accepts provider tokens signed by the private half of `publicKey` with
    /// `keyId` and `teamId`, judging `iat` against `now`. It presents a certificate from `certificates`
    /// (new ones by default). The server runs in a task this value owns until `stop()`.
    public static func start(
        publicKey: P256.Signing.PublicKey, keyId: String, teamId: String,
        certificates: TestCertificates? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> FakeAPNsServer {
        let certificates = try certificates ?? TestCertificates.make()
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificates.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.serverKeyPEM.utf8), format: .pem)))
        let state = SharedState(verifier: ProviderTokenVerifier(publicKey: publicKey, keyId: keyId, teamId: teamId, now: now))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let responder = CallbackResponder<Context> { request, context in
            try await state.respond(to: request, context: context)
        }
        let app = Application(
            responder: responder,
            server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "matchcast-fake-apns"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "matchcast.fake-apns", factory: { _ in SwiftLogNoOpLogHandler() }))
        let server = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            server.cancel()
            _ = await server.result
            throw StartError()
        }
        return FakeAPNsServer(port: port, certificates: certificates, state: state, server: server)
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        server.cancel()
        _ = await server.result
    }

    /// Answers every request for `token` with `failure`, until `clearFailures()`.
    public func fail(token: String, with failure: Failure) {
        state.locked { $0.stickyFaults[token] = failure }
    }

    /// Answers the next `count` requests for `token` with `failure` (after faults already queued for it).
    public func fail(token: String, next count: Int, with failure: Failure) {
        state.locked { $0.tokenFaults[token, default: []].append(contentsOf: repeatElement(failure, count: max(0, count))) }
    }

    /// Answers the next `count` requests, whatever their token, with `failure` (after faults already queued).
    public func fail(next count: Int, with failure: Failure) {
        state.locked { $0.faults.append(contentsOf: repeatElement(failure, count: max(0, count))) }
    }

    /// From now on, answers 403 `ExpiredProviderToken` to every provider token seen so far, as APNs
    /// does to a token past its hour; a token signed later is accepted.
    public func expireProviderTokensSeenSoFar() {
        state.locked { $0.expiredProviderTokens.formUnion($0.providerTokensSeen) }
    }

    /// Removes every fault and expiry set so far.
    public func clearFailures() {
        state.locked { values in
            values.stickyFaults = [:]
            values.tokenFaults = [:]
            values.faults = []
            values.expiredProviderTokens = []
        }
    }

    /// Every notification accepted so far, in arrival order.
    public var accepted: [Notification] { state.locked { $0.accepted } }

    /// Every request so far, in arrival order.
    public var log: [Exchange] { state.locked { $0.log } }

    /// The request context: the connection's channel, to tell HTTP/2 streams from HTTP/1 connections.
    struct Context: RequestContext {
        var coreContext: CoreRequestContextStorage
        let channel: any Channel

        init(source: ApplicationRequestContextSource) {
            coreContext = CoreRequestContextStorage(source: source)
            channel = source.channel
        }
    }

    struct StartError: Error, CustomStringConvertible {
        var description: String { "fake APNs did not start listening" }
    }
}
