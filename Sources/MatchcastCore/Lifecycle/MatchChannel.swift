import Foundation

/// When a match gets a broadcast channel, and how long its deletion waits: from configuration.
public struct ChannelPolicy: Sendable, Hashable {
    /// A live match followed by at least this many devices gets a channel; 0 turns channel mode off.
    public var minFollowers: Int
    /// After a failed create, the match goes per token and the next try waits this long.
    public var createRetryInterval: Duration
    /// The channel is deleted this long after its `end` was queued, so the end goes out first.
    public var deleteDelay: Duration
    /// A failed delete is tried again after 5 s, doubling up to this.
    public var maxDeleteBackoff: Duration

    public init(
        minFollowers: Int = 0, createRetryInterval: Duration = .seconds(30), deleteDelay: Duration = .seconds(10),
        maxDeleteBackoff: Duration = .seconds(600)
    ) {
        self.minFollowers = max(0, minFollowers)
        self.createRetryInterval = createRetryInterval
        self.deleteDelay = deleteDelay
        self.maxDeleteBackoff = maxDeleteBackoff
    }

    /// Whether channel mode is on at all.
    public var isEnabled: Bool { minFollowers > 0 }

    /// The rule: a match in progress with at least `minFollowers` open activities (its followers)
    /// gets a channel. Checked on every update while it has none, so a match that crosses the line
    /// after kick-off switches its later starts to the channel.
    public func wantsChannel(status: MatchStatus, followers: Int) -> Bool {
        isEnabled && status.isInProgress && followers >= minFollowers
    }
}

/// One match's broadcast channel (iOS 18) as a value: an event in, pushes out. No I/O.
///
/// The channel is driven by a synthetic activity whose "update token" is the channel id: it takes
/// the match's updates with exactly the rules of a device's activity (key events at priority 10
/// with an alert, routine changes coalesced, stale-dates and their refresh, timestamps that only
/// grow, the `end` with a dismissal-date), and its pushes go to the channel, once for every device
/// listening. What it adds is the channel's own end of life:
///
/// ```
/// open ──match final: end broadcast──▶ closing ──deleteAt passed, deleted──▶ (forgotten)
///                                        └──delete failed: deleteAt moves on (5 s doubling)
/// ```
/// The synthetic activity never restarts: Apple's 8-hour limit applies to the activities on the
/// devices (each restarts on its own, onto the same channel), not to the channel.
public struct MatchChannel: Sendable, Hashable, Codable {
    public enum Phase: String, Sendable, Hashable, Codable {
        /// Broadcasting the match's updates.
        case open
        /// The end went out; the channel is to be deleted.
        case closing
    }

    public let matchId: String
    /// Apple's id of the channel (base64).
    public let channelId: String
    public let createdAt: Date
    public private(set) var phase: Phase
    /// The synthetic activity (update token = channel id).
    public private(set) var activity: ActivityLifecycle
    /// When the channel may be deleted (set once closing).
    public private(set) var deleteAt: Date?
    /// Failed deletes so far.
    public private(set) var deleteAttempts: Int

    /// A channel just created for a match; `current` is the update that made it (the starts going out
    /// with it already show that content, so it is not broadcast again).
    public init(matchId: String, channelId: String, activityId: String, current: MatchUpdate?, now: Date, policy: ActivityPolicy) {
        self.matchId = matchId
        self.channelId = channelId
        createdAt = now
        phase = .open
        deleteAttempts = 0
        activity = .adopted(activityId: activityId, matchId: matchId, updateToken: channelId, now: now)
        if let current, !current.status.isFinal {
            var quiet = current
            quiet.keyEvents = []
            _ = activity.matchChanged(quiet, now: now, policy: Self.channelPolicy(policy))
        }
    }

    /// The match changed: the broadcast to send, if any. A final match sends the end and closes.
    public mutating func matchChanged(_ update: MatchUpdate, now: Date, policy: ActivityPolicy, channels: ChannelPolicy) -> [PushIntent] {
        guard phase == .open else { return [] }
        let actions = activity.matchChanged(update, now: now, policy: Self.channelPolicy(policy))
        return absorb(actions, now: now, channels: channels)
    }

    /// Time passed: a coalesced update or a stale-date refresh may be due.
    public mutating func tick(now: Date, policy: ActivityPolicy, feedIsFresh: Bool, channels: ChannelPolicy) -> [PushIntent] {
        guard phase == .open else { return [] }
        let actions = activity.tick(now: now, policy: Self.channelPolicy(policy), feedIsFresh: feedIsFresh)
        return absorb(actions, now: now, channels: channels)
    }

    /// When `tick` next has something to do, if ever.
    public func nextDeadline(policy: ActivityPolicy, feedIsFresh: Bool) -> Date? {
        guard phase == .open else { return nil }
        return activity.nextDeadline(policy: Self.channelPolicy(policy), feedIsFresh: feedIsFresh)
    }

    /// Whether the channel should be deleted now.
    public func deleteIsDue(now: Date) -> Bool {
        phase == .closing && (deleteAt.map { now >= $0 } ?? true)
    }

    /// A delete failed (or may not run yet): try again later, 5 s doubling up to the policy's cap.
    public mutating func deleteFailed(now: Date, channels: ChannelPolicy) {
        deleteAttempts += 1
        let backoff = min(5 * pow(2, Double(min(deleteAttempts - 1, 20))), channels.maxDeleteBackoff.seconds)
        deleteAt = now.addingTimeInterval(backoff)
    }

    /// The delete must wait (its end is still queued): look again at `moment`.
    public mutating func postponeDelete(until moment: Date) {
        deleteAt = moment
    }

    /// The synthetic activity's rules: a device's, without the 8-hour restart.
    static func channelPolicy(_ policy: ActivityPolicy) -> ActivityPolicy {
        var policy = policy
        policy.restartAfter = .seconds(100 * 365 * 86_400)
        return policy
    }

    private mutating func absorb(_ actions: [ActivityAction], now: Date, channels: ChannelPolicy) -> [PushIntent] {
        var intents: [PushIntent] = []
        for action in actions {
            switch action {
            case .send(var intent):
                intent.recipient = .channel(channelId)
                intents.append(intent)
            case .finished:
                phase = .closing
                deleteAt = now.addingTimeInterval(channels.deleteDelay.seconds)
            case .restart:
                break  // never asked for: the channel policy has no age limit
            }
        }
        return intents
    }
}
