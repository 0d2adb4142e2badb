import Foundation

extension LiveSurface {
    /// The longest time-to-live FCM accepts (28 days), and the cap on both platforms' TTL.
    public static let maxTTL = 2_419_200

    /// The time-to-live of a `start` or `update` built without a stale date: as long as APNs may keep
    /// trying a `start` by default.
    public static let defaultTTL = 30 * 60

    /// The per-match name both platforms replace by: `mc-` and the match id.
    ///
    /// Used as the FCM `collapse_key` (FCM keeps only the newest pending message of a key) and as the Web
    /// Notification `tag` (a notification with the tag of a shown one replaces it); both take any string. The
    /// Web Push `Topic` header, limited to 32 base64url characters, is made from the match id by the sink
    /// (MatchcastDelivery's `WebPushMessage.topic(forMatch:)`).
    public var tag: String { "mc-" + matchId }

    /// Seconds a push service should keep trying, clamped to 0...`maxTTL`:
    /// - `end`: as long as APNs keeps an `end` (8 hours); it must arrive, late or not, to take down the
    ///   ongoing notification, and it replaces any update still pending under the same collapse key or topic;
    /// - `start`, `update`: until the stale date; past it the content is out of date and a newer push is due;
    ///   0 when it has passed (deliver now or never);
    /// - `start`, `update` without a stale date: `defaultTTL`.
    public func ttl(now: Date) -> Int {
        if event == .end { return Int(ActivityPolicy.endExpiration.seconds) }
        guard let staleDate else { return Self.defaultTTL }
        let nowSeconds = now.timeIntervalSince1970
        guard nowSeconds.isFinite else { return 0 }
        // In floating point, so that no stale date can overflow the subtraction.
        let left = (Double(staleDate) - nowSeconds).rounded(.down)
        return Int(min(max(left, 0), Double(Self.maxTTL)))
    }

    /// Whether a push should go at once and draw attention: a start, an end or a key moment. This is the
    /// Web Push `Urgency: high`; routine updates are `normal`, as they go at APNs priority 5. (Every FCM message
    /// goes at `HIGH` priority: `FCMSendRequest`.)
    public var isUrgent: Bool { event != .update || isKeyMoment }
}
