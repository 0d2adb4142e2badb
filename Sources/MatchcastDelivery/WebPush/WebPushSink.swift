import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore

/// Sends deliveries to browsers' Web Push subscriptions (`WebPushSinkConfiguration.Recipient`): all to one
/// subscription, the command line's "straight to my own browser" mode (`follow --sink webpush`), as `--sink apns
/// --update-token` sends to one phone; or each to the subscription its target carries, the broker's mode (`serve`),
/// where browsers register theirs through the API and deliveries to other targets are left alone.
///
/// Each delivery becomes its live surface (`LiveSurface`, with the attributes its match's `start` carried, kept per
/// match so updates show the full names), rendered as the documented Web Push JSON
/// (`LiveSurface.webPushPayload(now:)`), encrypted for the subscription (RFC 8291), signed for its push service with
/// VAPID (RFC 8292) and POSTed with the match's `Topic`, the payload's `TTL` and `Urgency` (RFC 8030).
///
/// `deliver(_:)` queues and returns (`WebPushQueue`): a match's pushes go in order, one at a time; a newer update or
/// end of a match replaces an update still waiting (latest state wins), and a start or an end is never dropped.
/// `flush()` returns once everything handed over is settled. Each delivery is settled exactly once
/// (`Settled`, `matchcast_deliveries_total{sink="webpush", outcome}`):
/// - 201 (any 2xx): delivered;
/// - 429, 5xx, connection failures and timeouts: retried with `RetryPolicy` (jittered exponential backoff, never
///   sooner than a `Retry-After`), then dead-lettered when its attempts or total deadline run out;
/// - 404, 410: the subscription is gone: dead-lettered, and every delivery for it waiting or handed over later is
///   dead-lettered with that reason. To one subscription, `subscriptionGone` is set, nothing more is sent, and
///   `flush()` throws it; routed by target, `onGone` is told (the broker forgets the device's subscription) and the
///   other subscriptions carry on;
/// - 413, and any other status (400, 401, 403): dead-lettered with the status and the start of the answer's body.
///
/// The endpoint appears in logs and errors only as its origin (`https://host`); keys never.
/// The `HTTPClient` is the caller's: this sink never creates or shuts one down.
public struct WebPushSink: DeliverySink {
    public let name = "webpush"
    public var countsDeliveries: Bool { true }
    public let configuration: WebPushSinkConfiguration
    private let queue: WebPushQueue
    private let state: WebPushSinkState
    private let now: @Sendable () -> Date

    /// How many deliveries ended each way so far.
    public struct Settled: Sendable, Hashable {
        public var delivered = 0
        public var deadLettered = 0
        /// Replaced by a newer push of their match before they were sent.
        public var superseded = 0

        public init(delivered: Int = 0, deadLettered: Int = 0, superseded: Int = 0) {
            self.delivered = delivered
            self.deadLettered = deadLettered
            self.superseded = superseded
        }

        public var total: Int { delivered + deadLettered + superseded }
    }

    /// - Parameters:
    ///   - deadLetters: where deliveries go that could not be sent (the same recorder the webhook sink uses).
    ///   - clock: what retries sleep on; an instant or manual clock in tests.
    ///   - now: wall time, for the VAPID token's expiry, the TTL, HTTP-date `Retry-After` values and health.
    ///   - onGone: routed by target, told once of each subscription the push service calls gone: its target value and
    ///     the reason (`webpush:HTTP 410`).
    /// - Throws: `WebPushSetupError` for a subscription whose endpoint or keys cannot be used, or limits that are not
    ///   positive.
    public init(
        configuration: WebPushSinkConfiguration,
        client: HTTPClient,
        deadLetters: any DeadLetterRecorder,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        onGone: @escaping @Sendable (_ subscription: String, _ reason: String) async -> Void = { _, _ in },
        logger: Logger = Logger(label: "matchcast.webpush")
    ) throws(WebPushSetupError) {
        try configuration.validate()
        self.configuration = configuration
        self.now = now
        let state = WebPushSinkState()
        self.state = state
        var logger = logger
        if case .subscription(let subscription) = configuration.recipient {
            logger[metadataKey: "webpush.endpoint"] = "\(subscription.origin)"
        }
        queue = WebPushQueue(sender: WebPushSender(
            configuration: configuration, client: client, deadLetters: deadLetters, clock: clock, now: now,
            metrics: WebPushMetrics(factory: metricsFactory), logger: logger, state: state,
            vapidTokens: VAPIDTokenCache(vapid: configuration.vapid), onGone: onGone))
    }

    /// Queues `batch` (see the type's description) and returns, or with `waitsForSends`, returns once all of it is
    /// settled; never throws. Deliveries handed over once their subscription is gone or the sink shut down are
    /// dead-lettered at once.
    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        await queue.enqueue(batch)
        if configuration.waitsForSends { await queue.idle() }
    }

    /// Returns once every delivery handed over is settled; throws `WebPushSubscriptionGone` when the subscription
    /// turned out to be gone.
    public func flush() async throws {
        await queue.idle()
        if let gone = state.gone { throw gone }
    }

    /// Every delivery when sending all to one subscription; routed by target, the subscriptions' alone.
    public func takes(_ kind: PushTarget.Kind) -> Bool {
        if case .deliveryTargets = configuration.recipient { return kind == .webPushSubscription }
        return true
    }

    /// Set once the push service answered 404 or 410: the browser's subscription is no more.
    public var subscriptionGone: WebPushSubscriptionGone? { state.gone }

    /// False once the push service has not answered (connection failures, timeouts, 5xx) for
    /// `configuration.unhealthyAfter`, until it answers again.
    public var isHealthy: Bool {
        guard let since = state.locked({ $0.failingSince }) else { return true }
        return now().timeIntervalSince(since) < configuration.unhealthyAfter.seconds
    }

    /// How many deliveries ended each way so far.
    public var settled: Settled { state.locked { $0.settled } }

    /// Sends nothing more: running sends are cancelled, and what they and the queue held is dead-lettered
    /// ("shut down"). Call after `flush()` for a clean end.
    public func shutdown() {
        let tasks = state.locked { values in
            values.closed = true
            return Array(values.tasks.values)
        }
        for task in tasks { task.cancel() }
    }
}

