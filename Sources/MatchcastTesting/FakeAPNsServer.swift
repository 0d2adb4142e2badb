import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A fake APNs on `127.0.0.1` (a free port) for tests and the benchmark: HTTP/2 framed by hand
/// (`ConnectionHandler`) over SwiftNIO TLS with a throwaway certificate (`TestCertificates`), ALPN `h2` only, up to `maxConcurrentStreams`
/// (1000 by default) streams per connection, and the checks APNs makes on a Live Activity push.
/// It works at the frame level and verifies a provider token once per connection and token, so it
/// stays far faster than a sender it measures.
///
/// Every request is checked (see `FakeAPNsServer+Checks.swift`): `POST /3/device/<hex>`,
/// `apns-push-type: liveactivity`, an `apns-topic` ending in `.push-type.liveactivity`,
/// `apns-priority` 5 or 10, a UUID `apns-id`, a body of at most 4096 bytes that is a JSON object with
/// `aps`, and an `authorization: bearer` JWT whose ES256 signature verifies with the public key
/// given, whose `kid` and `iss` match, and whose `iat` is within an hour. A request failing a check
/// is answered as APNs would (e.g. 403 `InvalidProviderToken`); one passing them meets any fault a
/// test queued, or is accepted: recorded in `accepted` and answered 200.
///
/// Beyond answers, a test can make it misbehave: `stopAnswering()` (requests are read but not
/// answered until `resumeAnswering()`), `splitErrorBodies(into:)` (error bodies in several DATA
/// frames), `dropConnection(onRequestFor:)` (the connection closes on that request, unanswered).
/// It counts requests per `apns-id` (`duplicates`: requests for an id that already had a final
/// answer) and connections (`connectionsAccepted`).
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
    }

    /// One request as the fake saw it, whatever became of it.
    public struct Exchange: Sendable, Hashable {
        /// The token from the path, if the path had one.
        public var token: String?
        public var apnsID: String?
        /// The provider token, if one was sent.
        public var providerToken: String?
        public var status: Int
        /// The error reason, nil for 200; `ConnectionDropped` (status 0) when the fake closed the
        /// connection instead of answering.
        public var reason: String?
        /// Which connection it came on: 1 for the first the fake accepted, and so on.
        public var connection: Int
    }

    /// The port the server listens on.
    public let port: Int
    /// The certificates the server presents; a client must trust `caPEM`.
    public let certificates: TestCertificates
    let state: SharedState
    private let serverChannel: any Channel
    private let children: ChildChannels
    private let ownGroup: MultiThreadedEventLoopGroup?

    private init(
        port: Int, certificates: TestCertificates, state: SharedState, serverChannel: any Channel, children: ChildChannels,
        ownGroup: MultiThreadedEventLoopGroup?
    ) {
        self.ownGroup = ownGroup
        self.port = port
        self.certificates = certificates
        self.state = state
        self.serverChannel = serverChannel
        self.children = children
    }

    /// The endpoint to send to (no path).
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Starts a fake APNs that accepts provider tokens signed by the private half of `publicKey` with
    /// `keyId` and `teamId`, judging `iat` against `now`. It presents a certificate from `certificates`
    /// (new ones by default) and advertises `maxConcurrentStreams`. With `recording` false (the
    /// benchmark) it keeps counts only, not `accepted` and `log`. With `threads`, it runs on event-loop
    /// threads of its own (as a separate server would), shut down by `stop()`; otherwise on the
    /// process-wide singleton group. With `receiveWindow`, every stream may receive only that
    /// many bytes (and the connection its default 64 KiB) before the fake hands them back
    /// (WINDOW_UPDATE after each read), so a client has to split bodies and wait for windows.
    public static func start(
        publicKey: P256.Signing.PublicKey, keyId: String, teamId: String,
        certificates: TestCertificates? = nil, now: @escaping @Sendable () -> Date = { Date() },
        maxConcurrentStreams: Int = 1000, recording: Bool = true,
        threads: Int? = nil, receiveWindow: Int? = nil
    ) async throws -> FakeAPNsServer {
        let ownGroup = threads.map { MultiThreadedEventLoopGroup(numberOfThreads: max(1, $0)) }
        let group: any EventLoopGroup = ownGroup ?? MultiThreadedEventLoopGroup.singleton
        let certificates = try certificates ?? TestCertificates.make()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificates.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(certificates.serverKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let state = SharedState(
            verifier: ProviderTokenVerifier(publicKey: publicKey, keyId: keyId, teamId: teamId, now: now), recording: recording)
        let children = ChildChannels()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                let number = state.locked { values in
                    values.connections += 1
                    return values.connections
                }
                children.channels.withLock { $0[ObjectIdentifier(channel)] = channel }
                channel.closeFuture.whenComplete { _ in children.channels.withLock { $0[ObjectIdentifier(channel)] = nil } }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOSSLServerHandler(context: sslContext),
                        ConnectionHandler(
                            state: state, number: number, maxConcurrentStreams: maxConcurrentStreams, receiveWindow: receiveWindow),
                    ])
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw StartError()
        }
        return FakeAPNsServer(
            port: port, certificates: certificates, state: state, serverChannel: channel, children: children, ownGroup: ownGroup)
    }

    /// Stops listening, closes every connection, and waits until it has. Held requests are never answered.
    public func stop() async {
        try? await serverChannel.close()
        let open = children.channels.withLock { Array($0.values) }
        for channel in open { try? await channel.close() }
        let waiters = state.locked { values in
            defer { values.waiters.removeAll() }
            return values.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume() }
        try? await ownGroup?.shutdownGracefully()
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

    /// Stops answering: requests are read (and counted) but get no answer until `resumeAnswering()`;
    /// a connection keeps its other requests open meanwhile.
    public func stopAnswering() {
        state.locked { $0.answering = false }
    }

    /// Answers again, the held requests first.
    public func resumeAnswering() {
        state.resumeAnswering()
    }

    /// Sends each error body in `frames` DATA frames (each flushed on its own), to check a client
    /// reads an answer whole however it is split.
    public func splitErrorBodies(into frames: Int) {
        state.locked { $0.errorBodyFrames = max(1, frames) }
    }

    /// The next `times` requests for `token` close their connection instead of being answered (logged
    /// with status 0, reason `ConnectionDropped`).
    public func dropConnection(onRequestFor token: String, times: Int = 1) {
        state.locked { $0.dropConnection[token, default: 0] += max(0, times) }
    }

    /// Returns once at least `count` requests have arrived in all (answered or not); at once if they
    /// have. A safety net for tests that must act while requests are held; `stop()` releases it.
    public func waitForRequests(_ count: Int) async {
        await state.waitForRequests(count)
    }

    /// From now on, answers 410 `Unregistered` to `invalid` of all tokens (chosen by a hash of the
    /// token, so the same ones every time) and 429 to the first request of each notification for
    /// another `throttled` of them (its retry is accepted). The benchmark's error mix.
    public func failShare(invalid: Double, throttled: Double) {
        state.locked { values in
            values.invalidShare = min(max(invalid, 0), 1)
            values.throttledShare = min(max(throttled, 0), 1 - values.invalidShare)
        }
    }

    /// Starts noting when each answered request arrived (cleared by `takeArrivals()`).
    public func recordArrivals() {
        state.locked { $0.recordArrivals = true }
    }

    /// The arrival times noted since the last call, and stops noting.
    public func takeArrivals() -> [ContinuousClock.Instant] {
        state.locked { values in
            defer {
                values.arrivals = []
                values.recordArrivals = false
            }
            return values.arrivals
        }
    }

    /// Requests that arrived so far, answered or not.
    public var requestCount: Int { state.locked { $0.requests } }

    /// Notifications accepted (answered 200) so far.
    public var acceptedCount: Int { state.locked { $0.acceptedCount } }

    /// Answers so far by status.
    public var statusCounts: [Int: Int] { state.locked { $0.statusCounts } }

    /// How many requests carried `apnsID`.
    public func requestCount(apnsID: String) -> Int { state.locked { $0.perID[apnsID]?.requests ?? 0 } }

    /// Requests for an `apns-id` that had already been given a final answer (anything but 429, 5xx
    /// or 403 `ExpiredProviderToken`): a sender that re-sends answered requests shows up here.
    public var duplicates: Int { state.locked { $0.duplicates } }

    /// Connections accepted so far (TCP).
    public var connectionsAccepted: Int { state.locked { $0.connections } }

    /// The most streams open at once on one connection.
    public var peakConcurrentStreams: Int { state.locked { $0.peakStreams } }

    /// How many times a provider token's signature was checked (once per connection and token).
    public var providerTokenVerifications: Int { state.locked { $0.verifications } }

    /// The accepted connections, to close on `stop()` (closing the listener leaves them open).
    final class ChildChannels: Sendable {
        let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    }

    struct StartError: Error, CustomStringConvertible {
        var description: String { "fake APNs did not start listening" }
    }
}
