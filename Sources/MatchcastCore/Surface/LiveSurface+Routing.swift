import Foundation

extension LiveSurface {
    /// The longest time-to-live FCM accepts (28 days), and the cap on both platforms' TTL.
    public static let maxTTL = 2_419_200

    /// The time-to-live of a `start` or `update` built without a stale date: as long as APNs may keep
    /// trying a `start` by default.
    public static let defaultTTL = 30 * 60

    /// The Web Push `Topic` of a match: the first 24 bytes of SHA-256 over its id (UTF-8), base64url without
    /// padding, so exactly 32 characters of the base64url alphabet (RFC 8030 §5.4).
    ///
    /// The same for every push of a match, in every process and release, and different for two matches: a
    /// push service keeps only the newest undelivered message of a topic, so a phone that was offline gets the
    /// latest score, not the backlog.
    public static func topic(forMatch matchId: String) -> String {
        base64URL(PureSHA256.hash(Array(matchId.utf8)).prefix(24))
    }

    /// `topic(forMatch:)` of this surface's match.
    public var topic: String { Self.topic(forMatch: matchId) }

    /// The per-match name both platforms replace by: `mc-` and the topic (base64url characters and `-` only).
    ///
    /// Used as the FCM `collapse_key` (FCM keeps only the newest pending message of a key) and as the Web
    /// Notification `tag` (a notification with the tag of a shown one replaces it).
    public var tag: String { "mc-" + topic }

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
    /// Web Push `Urgency: high` and the FCM `high` priority; routine updates are `normal`, as they go at
    /// APNs priority 5.
    public var isUrgent: Bool { event != .update || isKeyMoment }
}

/// Base64url without padding (RFC 4648 §5). MatchcastDelivery's `Base64URL` is out of reach here: that module
/// depends on this one.
private func base64URL(_ bytes: some Collection<UInt8>) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    let bytes = Array(bytes)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count * 4 + 2) / 3)
    var index = 0
    while index < bytes.count {
        let chunk = bytes[index..<min(index + 3, bytes.count)]
        var group: UInt32 = 0
        for (offset, byte) in chunk.enumerated() { group |= UInt32(byte) << UInt32(16 - 8 * offset) }
        for position in 0...chunk.count {
            out.append(alphabet[Int(group >> UInt32(18 - 6 * position) & 0x3F)])
        }
        index += 3
    }
    return String(decoding: out, as: UTF8.self)
}
