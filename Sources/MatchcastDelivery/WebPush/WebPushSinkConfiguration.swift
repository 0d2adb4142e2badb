import Foundation
import MatchcastCore

/// Where and how the Web Push sink sends: the one browser subscription (or each delivery's own), the VAPID
/// credentials, and the limits.
public struct WebPushSinkConfiguration: Sendable {
    /// Which subscription each delivery goes to.
    public enum Recipient: Sendable {
        /// Every delivery to this one subscription: the command line's "straight to my own browser" mode.
        case subscription(WebPushMessage.Subscription)
        /// Each delivery to the subscription it carries (`PushTarget.Kind.webPushSubscription`, as the broker stores
        /// it: `WebPushMessage.Subscription.canonicalJSON`), the broker's mode: browsers register theirs through the
        /// API. Deliveries to other targets are not this sink's and are left alone.
        case deliveryTargets
    }

    public var recipient: Recipient
    public var vapid: VAPIDCredentials
    /// Where a click on the notification goes (`data.link`), per match; none by default.
    public var deepLink: DeepLinkTemplate?
    /// Whether `deliver(_:)` returns only once every delivery it was handed is settled (the broker's mode: its
    /// outbox lets go of a delivery once every sink took it), rather than once queued.
    public var waitsForSends: Bool
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

    /// Sends in flight at once when routed by target (`serve`): each lane (a match on one browser) sends one at a
    /// time, so this is how many browsers are being sent to at once.
    public static let routedConcurrency = 64

    /// `waitsForSends` false (the default) returns from `deliver(_:)` once queued: right for `follow` and `replay`,
    /// whose deliveries live in their own memory.
    public init(
        recipient: Recipient,
        vapid: VAPIDCredentials,
        waitsForSends: Bool = false,
        retry: RetryPolicy = .webPush,
        requestTimeout: Duration = .seconds(30),
        maxConcurrentRequests: Int = 4,
        maxErrorBodyBytes: Int = 200,
        unhealthyAfter: Duration = .seconds(60),
        rememberedMatches: Int = 1024
    ) {
        self.recipient = recipient
        self.vapid = vapid
        self.waitsForSends = waitsForSends
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.maxConcurrentRequests = maxConcurrentRequests
        self.maxErrorBodyBytes = maxErrorBodyBytes
        self.unhealthyAfter = unhealthyAfter
        self.rememberedMatches = rememberedMatches
    }

    /// Checks the subscription's keys and the limits.
    func validate() throws(WebPushSetupError) {
        if case .subscription(let subscription) = recipient { _ = try subscription.validated() }
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
