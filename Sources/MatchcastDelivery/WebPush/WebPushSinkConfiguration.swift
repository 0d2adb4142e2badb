import Foundation

/// Where and how the Web Push sink sends: the one browser subscription, the VAPID credentials, and the limits.
public struct WebPushSinkConfiguration: Sendable {
    public var subscription: WebPushMessage.Subscription
    public var vapid: VAPIDCredentials
    public var retry: RetryPolicy
    /// One attempt's whole exchange, the answer's body included.
    public var requestTimeout: Duration
    /// Pushes in flight at once (each of a different match: one match's go one after another).
    public var maxConcurrentRequests: Int
    /// How much of a refusing answer's body is kept with its dead letter.
    public var maxErrorBodyBytes: Int
    /// `isHealthy` turns false once the push service has not answered (connection failures, timeouts, 5xx) for
    /// this long.
    public var unhealthyAfter: Duration
    /// Matches whose `start` attributes (full names, competition, sport) are kept for their updates; the oldest
    /// is forgotten past this.
    public var rememberedMatches: Int

    public init(
        subscription: WebPushMessage.Subscription,
        vapid: VAPIDCredentials,
        retry: RetryPolicy = .webPush,
        requestTimeout: Duration = .seconds(30),
        maxConcurrentRequests: Int = 4,
        maxErrorBodyBytes: Int = 200,
        unhealthyAfter: Duration = .seconds(60),
        rememberedMatches: Int = 1024
    ) {
        self.subscription = subscription
        self.vapid = vapid
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.maxConcurrentRequests = maxConcurrentRequests
        self.maxErrorBodyBytes = maxErrorBodyBytes
        self.unhealthyAfter = unhealthyAfter
        self.rememberedMatches = rememberedMatches
    }

    /// Checks the subscription's keys and the limits.
    func validate() throws(WebPushSetupError) {
        _ = try subscription.validated()
        guard maxConcurrentRequests > 0, maxErrorBodyBytes >= 0, rememberedMatches > 0 else {
            throw WebPushSetupError(.limits, "maxConcurrentRequests and rememberedMatches must be positive")
        }
        guard requestTimeout > .zero, retry.maxAttempts > 0, retry.totalDeadline > .zero, unhealthyAfter > .zero else {
            throw WebPushSetupError(.limits, "request timeout, attempts, total deadline and unhealthyAfter must be positive")
        }
        guard retry.initialBackoff >= .zero, retry.maxBackoff >= retry.initialBackoff, (0...1).contains(retry.jitter) else {
            throw WebPushSetupError(.limits, "backoff must be 0 ≤ initial ≤ max and jitter in 0...1")
        }
    }
}

extension RetryPolicy {
    /// Web Push: as APNs, few and quick attempts (a score that is minutes late is worth little, and the `Topic`
    /// lets a newer push replace it anyway).
    public static let webPush = RetryPolicy(
        maxAttempts: 5, totalDeadline: .seconds(120), initialBackoff: .seconds(1), maxBackoff: .seconds(30),
        jitter: 0.2, maxRetryAfter: .seconds(60))
}
