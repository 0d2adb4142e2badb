import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import MatchcastCore

/// Sends deliveries to Android devices through Firebase Cloud Messaging's HTTP v1 API, as data messages an app turns
/// into an Android 16 Live Update (docs/android.md; the keys are docs/formats.md, "FCM data").
///
/// Each delivery becomes its live surface (`LiveSurface(delivery:attributes:)`, with the attributes its match's
/// `start` carried, kept per match for the updates that do not carry them) and that surface's `fcmMessage(now:)`:
/// one `POST {endpoint}/v1/projects/{project_id}/messages:send` with `Authorization: Bearer <access token>`
/// (`FCMAccessTokenProvider`). A surface too large for FCM even after shortening is dead-lettered unsent.
///
/// `deliver(_:)` groups the batch into one queue per registration token and match: a queue's messages go one after
/// another, in batch order; up to `maxConcurrentRequests` queues send at once. Consecutive deliveries of one queue
/// with the same message (one update to several targets, all sent to the one configured token) go as one send.
/// Per answer (see `FCMAnswer`): 200 is delivered; a dead token (404 `UNREGISTERED`, a 400 about the token) is
/// recorded in `answers`, reported through `onInvalidToken`, and every delivery meant for it, now or later, is
/// dead-lettered unsent; a 401 gets a new access token and one immediate resend; 429, 5xx, timeouts and connection
/// errors are retried with `retry` on the injected clock (never sooner than a `Retry-After`); any other answer
/// dead-letters the message's deliveries with FCM's reason. Every delivery is settled once: sent, dead-lettered, or
/// handed back in the `FCMError` `deliver` throws.
///
/// The `HTTPClient` is the caller's: this sink never creates or shuts one down. Registration tokens, access tokens
/// and the key never appear whole in its logs or errors.
public struct FCMSink: DeliverySink {
    public let name = "fcm"
    public var countsDeliveries: Bool { true }
    public let configuration: FCMSinkConfiguration
    public let account: FCMServiceAccount
    /// Gets and renews the access token; shared by every send of this sink.
    public let accessTokens: FCMAccessTokenProvider
    /// FCM's last answer per registration token, for the device diagnostics.
    public let answers: TokenAnswers
    public func lastAnswer(token: String) -> TokenAnswers.Answer? { answers.last(token: token) }
    /// False while no access token can be had (the last exchange failed for good); for `/readyz`.
    public var isHealthy: Bool { accessTokens.lastFailure == nil }

    let sendURL: String
    let exchange: FCMExchange
    let deadLetters: any DeadLetterRecorder
    let onInvalidToken: @Sendable (_ token: String, _ reason: String) async -> Void
    let clock: any Clock<Duration>
    let now: @Sendable () -> Date
    let metrics: FCMMetrics
    let logger: Logger
    /// Match id → the attributes its last `start` carried.
    let attributes: BoundedMemory<String, ActivityAttributes>
    /// Registration token → how FCM called it dead.
    let deadTokens: BoundedMemory<String, DeadToken>
    let inFlight = FCMInFlight()

    /// - Parameters:
    ///   - client: sends and token exchanges go through it; the caller owns and shuts it down.
    ///   - deadLetters: where refused deliveries, and those meant for a dead token, are kept.
    ///   - onInvalidToken: told once per token FCM calls dead, with its reason (`UNREGISTERED`, `INVALID_ARGUMENT`).
    ///   - clock: what retries sleep on; a manual clock in tests.
    ///   - now: wall time, for TTLs, the assertions' `iat` and the access token's age.
    /// - Throws: `FCMError`: `service_account` for an unreadable or wrong key file, `config` for a bad endpoint,
    ///   token or limit. The messages never quote the key.
    public init(
        configuration: FCMSinkConfiguration,
        client: HTTPClient,
        deadLetters: any DeadLetterRecorder,
        onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void = { _, _ in },
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "matchcast.fcm")
    ) throws(FCMError) {
        let endpoint = try configuration.validate()
        let account = try configuration.loadServiceAccount()
        let metrics = FCMMetrics(factory: metricsFactory)
        var logger = logger
        logger[metadataKey: "fcm.project"] = "\(account.projectId)"
        self.configuration = configuration
        self.account = account
        self.accessTokens = FCMAccessTokenProvider(
            account: account, client: client, requestTimeout: configuration.requestTimeout, retry: configuration.tokenRetry,
            clock: clock, now: now, metrics: metrics, logger: logger)
        answers = TokenAnswers()
        sendURL = FCMSendRequest.url(endpoint: endpoint, projectId: account.projectId)
        exchange = FCMExchange(
            client: client, timeout: configuration.requestTimeout, maxBodyBytes: max(configuration.maxErrorBodyBytes, 1024))
        self.deadLetters = deadLetters
        self.onInvalidToken = onInvalidToken
        self.clock = clock
        self.now = now
        self.metrics = metrics
        self.logger = logger
        attributes = BoundedMemory(capacity: configuration.rememberedMatches)
        deadTokens = BoundedMemory(capacity: 10_000)
    }

    /// FCM's answer that killed a registration token.
    struct DeadToken: Sendable {
        var status: Int
        var reason: String
    }

    /// Returns once every delivery in `batch` is sent or dead-lettered.
    ///
    /// Throws `FCMError` when some were neither: `retries_exhausted` when a queue used up its attempts,
    /// `access_token_refused` / `access_token_unavailable` when no access token could be had. Their deliveries, and
    /// those of queues not started once FCM looked down, are in `undelivered`, in batch order, for the caller to keep.
    /// Cancellation stops sending and throws `CancellationError`.
    public func deliver(_ batch: [Delivery]) async throws {
        guard !batch.isEmpty else { return }
        inFlight.enter()
        defer { inFlight.leave() }
        let queues = await prepare(batch)
        let total = try await send(queues)
        metrics.deliveries(outcome: "delivered", count: total.delivered)
        metrics.deliveries(outcome: "invalid_token", count: total.invalid)
        metrics.deliveries(outcome: "dead_letter", count: total.deadLettered)
        metrics.deliveries(outcome: "failed", count: total.undelivered.count)
        guard !total.undelivered.isEmpty else { return }
        let undelivered = total.undelivered.sorted { $0.index < $1.index }.map(\.delivery)
        logger.error("FCM deliveries left undelivered", metadata: [
            "fcm.undelivered": "\(undelivered.count)", "fcm.last": "\(total.problem ?? "-")",
        ])
        if let failure = total.failure { throw failure.leaving(undelivered) }
        throw FCMError(code: .retriesExhausted(queues: total.failedQueues, last: total.problem ?? "-"), undelivered: undelivered)
    }

    /// Every delivery when sending all to one token; routed by target, the FCM tokens' alone.
    public func takes(_ kind: PushTarget.Kind) -> Bool {
        if case .deliveryTargets = configuration.recipient { return kind == .fcmToken }
        return true
    }

    /// Returns once every `deliver` call in progress has returned.
    public func flush() async throws {
        await inFlight.idle()
    }
}
