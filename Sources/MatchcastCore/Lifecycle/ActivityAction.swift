/// A push the lifecycle decided on; the manager turns it into a `Delivery` (id, token, topic).
public struct PushIntent: Sendable, Hashable {
    /// Who receives it: the device's push-to-start token (for `start`), the activity's update token,
    /// or every activity listening on a broadcast channel (iOS 18; `update` and `end` only).
    public enum Recipient: Sendable, Hashable {
        case pushToStart
        /// As the lifecycle keeps it: a fan-out's delivery takes it as it is (`PushTarget.token`).
        case updateToken(CompactToken)
        case channel(String)
    }

    public var recipient: Recipient
    public var aps: APS
    public var priority: Int
    /// Unix seconds: APNs drops the push after this.
    public var expiration: Int

    public init(recipient: Recipient, aps: APS, priority: Int, expiration: Int) {
        self.recipient = recipient
        self.aps = aps
        self.priority = priority
        self.expiration = expiration
    }
}

/// What the lifecycle asks its manager to do.
public enum ActivityAction: Sendable, Hashable {
    /// Send this push.
    case send(PushIntent)
    /// The activity reached Apple's age limit and was ended: start a fresh one for the same follow.
    case restart
    /// The activity is over; nothing more will be sent for it.
    case finished
}

/// Why an activity ends before its match does.
public enum ActivityEndReason: String, Sendable, Hashable, Codable {
    /// The device unfollowed the match: send `end`, dismiss at once.
    case unfollowed
    /// The user dismissed it on the device: stop pushing, send nothing.
    case dismissed
    /// APNs or a downstream service said the token is dead: nothing can reach it.
    case tokenInvalid
}
