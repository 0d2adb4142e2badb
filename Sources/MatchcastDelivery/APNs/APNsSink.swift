import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import NIOCore
import NIOSSL

/// Sends deliveries straight to APNs over HTTP/2 with token-based (JWT) authentication: one
/// `POST /3/device/<token>` per delivery, the body being exactly `payload.bytes`.
///
/// `deliver(_:)` sends the first delivery of every token at once, through a pool of HTTP/2
/// connections (`APNsConnectionPool`: up to `maxConnections`, each keeping up to the server's
/// concurrent-stream limit in flight); the deliveries of one token go one after another, in batch
/// order. Every request of one update shares the payload bytes and the header fields; only `:path`
/// and `apns-id` differ. Per answer (see `APNsAnswer`): 200 is delivered; a dead token (410, 400
/// `BadDeviceToken`/`DeviceTokenNotForTopic`) is reported once through `onInvalidToken` and nothing
/// more is sent to it; 403 `ExpiredProviderToken` gets a new provider token and an immediate retry;
/// 429, 5xx, timeouts and connection errors are retried with jittered exponential backoff on the
/// injected clock (that token only; the others go on); any other status dead-letters the delivery.
///
/// ## Connections
/// The sink opens its own connections (HTTP/2 framed by `APNsConnection` on SwiftNIO TLS, ALPN `h2`) on the event loops of
/// the `HTTPClient` it is given (or `eventLoopGroup`); it never shuts that client down. Set-up and
/// every request have deadlines (`connectTimeout`, `requestTimeout`), so a server that is not
/// trusted, not reachable or not answering fails the attempt instead of hanging it. Connection
/// trouble is logged, counted (`matchcast_apns_connection_errors_total{kind}`) and shown by
/// `isHealthy` / `lastConnectError`, for `/readyz`. `shutdown()` closes the connections.
public struct APNsSink: DeliverySink {
    public let name = "apns"
    public var countsDeliveries: Bool { true }
    public let configuration: APNsSinkConfiguration
    /// Signs and caches the provider token; shared by every request of this sink.
    public let signer: APNsTokenSigner
    let pool: APNsConnectionPool
    let deadLetters: any DeadLetterRecorder
    let onInvalidToken: @Sendable (_ token: String, _ reason: String) async -> Void
    let clock: any Clock<Duration>
    let now: @Sendable () -> Date
    /// APNs' last answer per device token (`TokenAnswers`), for the device diagnostics.
    public let answers = TokenAnswers()
    public func lastAnswer(token: String) -> TokenAnswers.Answer? { answers.last(token: token) }
    let metrics: APNsMetrics
    let logger: Logger

    /// - Parameters:
    ///   - client: lends its event loops to the sink's connections (requests no longer go through
    ///     it); the caller still owns and shuts it down.
    ///   - onInvalidToken: told once per dead token with APNs' reason (`Unregistered`, `BadDeviceToken`,
    ///     `DeviceTokenNotForTopic`, `ExpiredToken`, or `MalformedToken` for a target that is not hex);
    ///     the broker invalidates the token there, which ends its activity.
    ///   - clock: what retries sleep on; a manual clock in tests.
    ///   - now: wall time, for the provider token's `iat` and age.
    ///   - eventLoopGroup: where the connections run; the client's event loops by default.
    /// - Throws: `APNsError`: `key` for an unreadable or wrong key, `config` for a bad endpoint, CA
    ///   file or limit. The messages never quote the key.
    public init(
        configuration: APNsSinkConfiguration,
        client: HTTPClient,
        deadLetters: any DeadLetterRecorder,
        onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "matchcast.apns"),
        eventLoopGroup: (any EventLoopGroup)? = nil
    ) throws(APNsError) {
        let endpoint = try configuration.validate()
        let tls = try configuration.tlsConfiguration()
        signer = try APNsTokenSigner(
            credentials: configuration.credentials(), refreshInterval: configuration.tokenRefreshInterval, now: now)
        self.configuration = configuration
        self.deadLetters = deadLetters
        self.onInvalidToken = onInvalidToken
        self.clock = clock
        self.now = now
        let metrics = APNsMetrics(factory: metricsFactory)
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "apns.endpoint"] = "\(endpoint)"
        self.logger = logger
        guard let url = URL(string: endpoint),
              let settings = APNsConnectionPool.Settings(
                  url: url, tls: tls, maxConnections: configuration.maxConnections,
                  maxStreamsPerConnection: configuration.maxConcurrentRequests,
                  connectTimeout: configuration.connectTimeout, requestTimeout: configuration.requestTimeout)
        else { throw .invalidConfiguration("endpoint has no host") }
        do {
            pool = try APNsConnectionPool(
                settings: settings,
                group: eventLoopGroup ?? client.eventLoopGroup, metrics: metrics, logger: logger)
        } catch {
            throw .invalidConfiguration("TLS configuration: \(error)")
        }
    }

    /// What the sink's connections look like now.
    public struct ConnectionStatus: Sendable {
        /// Connections open now.
        public var open: Int
        /// Connections set up since the start.
        public var opened: Int
        /// The most open at once.
        public var peakOpen: Int
        /// Set-ups that failed (TLS, refused, timed out).
        public var failedSetups: Int
        /// Requests sent a second time because their connection closed before an answer.
        public var resent: Int
        /// The most requests in flight at once on one connection.
        public var peakInFlight: Int
    }

    /// False after a connection set-up failed or a connection stopped answering, until the next
    /// set-up succeeds; true before any was tried. For `/readyz`.
    public var isHealthy: Bool { pool.statistics.healthy }

    /// The last connection failure (set-up or stall), whether or not one succeeded since; nil if none.
    /// Never holds a token or key.
    public var lastConnectError: String? { pool.statistics.lastConnectError }

    /// Open and past connections, for logs and the benchmark.
    public var connectionStatus: ConnectionStatus {
        let statistics = pool.statistics
        return ConnectionStatus(
            open: statistics.open, opened: statistics.opened, peakOpen: statistics.peakOpen,
            failedSetups: statistics.failedSetups, resent: statistics.resent, peakInFlight: statistics.peakInFlight)
    }

    /// APNs's own: update and push-to-start tokens, and broadcast channels.
    public func takes(_ kind: PushTarget.Kind) -> Bool { kind.isAPNs }

    /// Closes the connections and fails whatever is still waiting; a later `deliver` fails at once
    /// (its deliveries come back undelivered). Every copy of the sink shares the connections.
    public func shutdown() {
        pool.shutdown()
    }

    /// Returns once every delivery in `batch` is accepted, reported as going to a dead token, or
    /// dead-lettered. Deliveries to other push services' targets (`PushTarget.Kind.isAPNs` false) are left alone.
    ///
    /// Throws `APNsError` (`retries_exhausted`) when some token used up its attempts: its deliveries
    /// not yet accepted, and those of tokens not started because APNs looked down, are in
    /// `undelivered`, for the caller to keep (a retried delivery keeps its `apns-id`).
    /// Cancellation stops sending and throws `CancellationError`.
    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        let (devices, channels) = await prepare(batch)
        var total = try await send(devices)
        // Broadcasts (target.kind == channel) go after the device pushes: see APNsSink+Broadcast.swift.
        if !channels.isEmpty { total.merge(try await send(channels)) }
        metrics.deliveries(outcome: "delivered", count: total.delivered)
        metrics.deliveries(outcome: "invalid_token", count: total.invalid)
        metrics.deliveries(outcome: "dead_letter", count: total.deadLettered)
        metrics.deliveries(outcome: "failed", count: total.undelivered.count)
        guard !total.undelivered.isEmpty else { return }
        logger.error("APNs retries exhausted", metadata: [
            "apns.undelivered": "\(total.undelivered.count)", "apns.tokens": "\(total.failedQueues)",
            "apns.last": "\(total.problem ?? "-")",
        ])
        throw APNsError.retriesExhausted(tokens: total.failedQueues, last: total.problem ?? "-", undelivered: total.undelivered)
    }

    /// One delivery with its request body.
    struct Item: Sendable {
        var delivery: Delivery
        var body: ByteBuffer
        /// The same for every attempt, so APNs and its logs can tell a retry from a new push.
        var apnsID: String
    }

    /// The deliveries of one token (or broadcast channel), in batch order.
    struct TokenQueue: Sendable {
        /// The device token, or the channel id, as the deliveries keep it.
        var token: CompactToken
        var items: [Item]
    }

    /// What became of tokens' deliveries (a failed queue is a token whose retries ran out).
    typealias QueueResult = SendTally<Delivery, Never>

    /// Groups deliveries by device token or channel and gives each distinct payload one
    /// `ByteBuffer`, shared by every request that sends it. Device tokens that are not hex are
    /// reported as invalid here.
    private func prepare(_ batch: [Delivery]) async -> (devices: [TokenQueue], channels: [TokenQueue]) {
        var devices = QueueBuilder(capacity: batch.count)
        var channels = QueueBuilder(capacity: 0)
        var buffers: [[UInt8]: ByteBuffer] = [:]
        var last: (bytes: [UInt8], buffer: ByteBuffer)?
        var malformed: [String: Int] = [:]
        for delivery in batch {
            // An Android or web device's delivery is another sink's (FCM, Web Push): not APNs's to send, nor to call malformed.
            guard delivery.target.kind.isAPNs else { continue }
            let target = delivery.target.token
            let isChannel = delivery.target.kind == .channel
            guard isChannel || Self.isHexToken(target) else {
                malformed[target.string, default: 0] += 1
                continue
            }
            let bytes = delivery.payload.bytes
            let body: ByteBuffer
            // Deliveries of one update share one array: equal storage compares at once.
            if let last, last.bytes == bytes {
                body = last.buffer
            } else if let known = buffers[bytes] {
                body = known
            } else {
                body = ByteBuffer(bytes: bytes)
                buffers[bytes] = body
            }
            last = (bytes, body)
            let item = Item(delivery: delivery, body: body, apnsID: APNsNotificationID.uuid(forDeliveryId: delivery.id))
            if isChannel {
                channels.append(item, to: target)
            } else {
                devices.append(item, to: target)
            }
        }
        for (token, count) in malformed {
            await onInvalidToken(token, "MalformedToken")
            metrics.deliveries(outcome: "invalid_token", count: count)
            logger.warning("device token is not hex; reported invalid", metadata: ["apns.token": "\(Redact.token(token))"])
        }
        return (devices.queues, channels.queues)
    }

    /// Queues in order of first appearance, one per target.
    private struct QueueBuilder {
        var queues: [TokenQueue] = []
        var index: [CompactToken: Int] = [:]

        init(capacity: Int) {
            queues.reserveCapacity(capacity)
            index.reserveCapacity(capacity)
        }

        mutating func append(_ item: Item, to target: CompactToken) {
            if let position = index[target] {
                queues[position].items.append(item)
            } else {
                index[target] = queues.count
                queues.append(TokenQueue(token: target, items: [item]))
            }
        }
    }

    /// An even number of hex digits, at most 512: anything else cannot be a device token, and must
    /// not be put into a request path.
    static func isHexToken(_ token: CompactToken) -> Bool {
        token.isHexDigits || isHexToken(token.string)
    }

    static func isHexToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard !utf8.isEmpty, utf8.count <= 512, utf8.count % 2 == 0 else { return false }
        return utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
    }
}
