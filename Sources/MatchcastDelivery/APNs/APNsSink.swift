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
/// `deliver(_:)` sends to up to `maxConcurrentRequests` tokens at once; the deliveries of one token
/// go one after another, in batch order. Per answer (see `APNsAnswer`): 200 is delivered; a dead token
/// (410, 400 `BadDeviceToken`/`DeviceTokenNotForTopic`) is reported once through `onInvalidToken`
/// and nothing more is sent to it; 403 `ExpiredProviderToken` gets a new provider token and an
/// immediate retry; 429, 5xx, timeouts and connection errors are retried with jittered exponential
/// backoff on the injected clock; any other status dead-letters the delivery.
///
/// ## The HTTP client
/// The `HTTPClient` is the caller's: this sink never creates or shuts one down. It must be allowed
/// to speak HTTP/2, which AsyncHTTPClient negotiates by ALPN over TLS: keep
/// `HTTPClient.Configuration.httpVersion` at `.automatic` (the default), never `.http1Only`. With
/// `trustRoots` `.system` the client's own TLS configuration is used; with `.file`/`.pem` the sink
/// sends every request with its own TLS configuration trusting only those certificates, so one
/// process-wide client serves the feeds, the webhook and a test APNs alike.
public struct APNsSink: DeliverySink {
    public let name = "apns"
    public var countsDeliveries: Bool { true }
    public let configuration: APNsSinkConfiguration
    /// Signs and caches the provider token; shared by every request of this sink.
    public let signer: APNsTokenSigner
    let client: HTTPClient
    let tls: TLSConfiguration?
    let deadLetters: any DeadLetterRecorder
    let onInvalidToken: @Sendable (_ token: String, _ reason: String) async -> Void
    let clock: any Clock<Duration>
    let metrics: APNsMetrics
    let logger: Logger
    /// The base URL, without a trailing slash.
    let endpoint: String

    /// - Parameters:
    ///   - onInvalidToken: told once per dead token with APNs' reason (`Unregistered`, `BadDeviceToken`,
    ///     `DeviceTokenNotForTopic`, `ExpiredToken`, or `MalformedToken` for a target that is not hex);
    ///     the broker invalidates the token there, which ends its activity.
    ///   - clock: what retries sleep on; a manual clock in tests.
    ///   - now: wall time, for the provider token's `iat` and age.
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
        logger: Logger = Logger(label: "matchcast.apns")
    ) throws(APNsError) {
        endpoint = try configuration.validate()
        tls = try configuration.tlsConfiguration()
        signer = try APNsTokenSigner(
            credentials: configuration.credentials(), refreshInterval: configuration.tokenRefreshInterval, now: now)
        self.configuration = configuration
        self.client = client
        self.deadLetters = deadLetters
        self.onInvalidToken = onInvalidToken
        self.clock = clock
        self.metrics = APNsMetrics(factory: metricsFactory)
        var logger = logger
        logger[metadataKey: "apns.endpoint"] = "\(endpoint)"
        self.logger = logger
    }

    /// Returns once every delivery in `batch` is accepted, reported as going to a dead token, or
    /// dead-lettered.
    ///
    /// Throws `APNsError` (`retries_exhausted`) when some token used up its attempts: its deliveries
    /// not yet accepted, and those of tokens not started because APNs looked down, are in
    /// `undelivered`, for the caller to keep (a retried delivery keeps its `apns-id`).
    /// Cancellation stops sending and throws `CancellationError`.
    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        let queues = await prepare(batch)
        let width = configuration.maxConcurrentRequests

        var total = QueueResult()
        var started = 0
        var stopped = false
        try await withThrowingTaskGroup(of: QueueResult.self) { group in
            while started < min(width, queues.count) {
                let queue = queues[started]
                group.addTask { try await send(queue) }
                started += 1
            }
            while let result = try await group.next() {
                total.merge(result)
                // A token that gave up on 5xx, timeouts or connection errors says APNs is down: start
                // no more. A throttled token says nothing about the others.
                if result.outage { stopped = true }
                if !stopped, started < queues.count {
                    let queue = queues[started]
                    group.addTask { try await send(queue) }
                    started += 1
                }
            }
        }
        let notStarted = queues[started...].flatMap { $0.items.map(\.delivery) }
        let undelivered = total.undelivered + notStarted
        metrics.deliveries(outcome: "delivered", count: total.delivered)
        metrics.deliveries(outcome: "invalid_token", count: total.invalid)
        metrics.deliveries(outcome: "dead_letter", count: total.deadLettered)
        metrics.deliveries(outcome: "failed", count: undelivered.count)
        guard !undelivered.isEmpty else { return }
        let tokens = total.failedTokens + (queues.count - started)
        logger.error("APNs retries exhausted", metadata: [
            "apns.undelivered": "\(undelivered.count)", "apns.tokens": "\(tokens)", "apns.last": "\(total.problem ?? "-")",
        ])
        throw APNsError.retriesExhausted(tokens: tokens, last: total.problem ?? "not started", undelivered: undelivered)
    }

    /// One delivery with its request body.
    struct Item: Sendable {
        var delivery: Delivery
        var body: ByteBuffer
    }

    /// The deliveries of one token, in batch order.
    struct TokenQueue: Sendable {
        var token: String
        var items: [Item]
    }

    /// What became of one token's deliveries.
    struct QueueResult: Sendable {
        var delivered = 0
        var invalid = 0
        var deadLettered = 0
        var undelivered: [Delivery] = []
        var failedTokens = 0
        var problem: String?
        /// Gave up on something that is not this token's fault (5xx, timeout, connection).
        var outage = false

        mutating func merge(_ other: QueueResult) {
            delivered += other.delivered
            invalid += other.invalid
            deadLettered += other.deadLettered
            undelivered += other.undelivered
            failedTokens += other.failedTokens
            problem = other.problem ?? problem
        }
    }

    /// Groups device deliveries by token and gives each distinct payload one `ByteBuffer`, shared by
    /// every request that sends it. Deliveries APNs' device API cannot take are settled here:
    /// channel targets are dead-lettered, tokens that are not hex are reported as invalid.
    private func prepare(_ batch: [Delivery]) async -> [TokenQueue] {
        var queues: [TokenQueue] = []
        var queueIndex: [String: Int] = [:]
        var buffers: [[UInt8]: ByteBuffer] = [:]
        var last: (bytes: [UInt8], buffer: ByteBuffer)?
        var channels: [Delivery] = []
        var malformed: [String: Int] = [:]
        for delivery in batch {
            guard delivery.target.kind != .channel else {
                channels.append(delivery)
                continue
            }
            let token = delivery.target.value
            guard Self.isHexToken(token) else {
                malformed[token, default: 0] += 1
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
            if let index = queueIndex[token] {
                queues[index].items.append(Item(delivery: delivery, body: body))
            } else {
                queueIndex[token] = queues.count
                queues.append(TokenQueue(token: token, items: [Item(delivery: delivery, body: body)]))
            }
        }
        if !channels.isEmpty {
            await deadLetters.record(channels, status: 0, body: "channel targets need APNs broadcast, which this sink does not send")
            metrics.deliveries(outcome: "dead_letter", count: channels.count)
            logger.warning("APNs sink cannot send to channels; dead-lettered", metadata: ["apns.count": "\(channels.count)"])
        }
        for (token, count) in malformed {
            await onInvalidToken(token, "MalformedToken")
            metrics.deliveries(outcome: "invalid_token", count: count)
            logger.warning("device token is not hex; reported invalid", metadata: ["apns.token": "\(Redact.token(token))"])
        }
        return queues
    }

    /// An even number of hex digits, at most 512: anything else cannot be a device token, and must
    /// not be put into a request path.
    static func isHexToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard !utf8.isEmpty, utf8.count <= 512, utf8.count % 2 == 0 else { return false }
        return utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
    }
}
