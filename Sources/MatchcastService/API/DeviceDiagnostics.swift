import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastStore

/// `GET /v1/devices/{id}/diagnostics` (and its admin twin): where a device's tokens and activities stand, and what
/// needs attention, for the app developer chasing "my Live Activity never showed". Tokens are shown redacted.
public struct DeviceDiagnostics: Sendable, Hashable, Codable {
    public struct Token: Sendable, Hashable, Codable {
        /// Redacted (`80a1…9f3c`).
        public var token: String
        public var environment: APNsEnvironment
        public var updatedAt: Date
        public var ageSeconds: Int
        /// What APNs last said about the token, as this process saw it (`TokenAnswers`: in memory, bounded); absent
        /// when it sent nothing to it since it started.
        public var lastAnswer: TokenAnswers.Answer?
    }

    public struct Activity: Sendable, Hashable, Codable {
        public var activityId: String
        public var matchId: String
        /// `waiting`, `starting` (its start went out; no update token yet), `active`, `ended`.
        public var phase: String
        /// When its start was sent.
        public var startedAt: Date?
        /// When its last push was sent.
        public var lastSentAt: Date?
        /// Redacted; absent until the app reports it.
        public var updateToken: String?
        /// How long ago the app first reported that token (`UpdateTokenSighting`); absent when not known.
        public var updateTokenAgeSeconds: Int?
        /// What APNs last said about that token, as `Token.lastAnswer`.
        public var updateTokenLastAnswer: TokenAnswers.Answer?
        /// The broadcast channel it listens on (channel mode), which needs no update token.
        public var channelId: String?
        /// Its priority-10 pushes in the last hour, and its match's, against the ceiling (open activities only).
        public var highPriority: HighPriority?
        public var attention: [Attention]
    }

    /// The budget ledger of an open activity (`HighPriorityLedger`): its own priority-10 pushes in the last hour, and its
    /// match's, which decide whether the next key event goes at 10. Every open activity of a match is sent the same
    /// key events at the same priority, so the activity's are the match's since it started (at most: one without an
    /// update token held them and got the latest at 5).
    public struct HighPriority: Sendable, Hashable, Codable {
        /// This activity's priority-10 pushes in the last hour.
        public var lastHour: Int
        /// Its match's priority-10 pushes in the last hour: key events go at 5 while this is at `ceiling`. Absent from
        /// a serve older than it (as every field added later is, so `devices inspect` reads a serve of another build).
        public var matchLastHour: Int?
        public var ceiling: Int
        /// When the oldest of the match's hour leaves it (only when the ceiling is reached).
        public var roomAt: Date?
    }

    public struct Refusal: Sendable, Hashable, Codable {
        /// `pushToStart` or `update`.
        public var kind: String
        /// Redacted.
        public var token: String
        public var activityId: String?
        public var reason: String
        public var at: Date
    }

    /// Something that usually means a problem on the device's side, with what it likely means.
    public struct Attention: Sendable, Hashable, Codable {
        public var code: String
        public var message: String
    }

    public var deviceId: String
    /// The app it belongs to (`default` unless it registered for another, docs/apps.md). Absent from an older serve.
    public var app: String?
    public var registeredAt: Date
    public var pushToStartToken: Token?
    /// The matches it follows.
    public var follows: [String]
    /// Its activities, open ones first, newest start first.
    public var activities: [Activity]
    /// Its tokens APNs (or a downstream service) refused as dead, newest first.
    public var refusals: [Refusal]
    /// The priority-10 pushes of the last hour to all its open activities together: iOS keeps one budget per device,
    /// so a device following several live matches spends it several times as fast. Absent from an older serve.
    public var highPriorityLastHour: Int?
    /// Device-wide flags; each activity has its own too.
    public var attention: [Attention]

    /// How long after a remote start the app has to report the activity's update token before the start is flagged
    /// as probably never shown.
    public static let updateTokenWait: Duration = .seconds(600)
    /// Refusals within this window that make the device's tokens flagged as repeatedly refused.
    public static let refusalWindow: Duration = .seconds(86_400)

    /// Builds the view and its flags from what the store holds, at `now`: `matches` are the records of the open
    /// activities' matches, `ceiling` the policy's `highPriorityPerHour`, `sightings` when its update tokens were
    /// first reported, `lastAnswer` what APNs last said about a token.
    public init(
        device: DeviceRecord, token: PushToStartTokenRecord?, follows: [FollowRecord], activities: [ActivityRecord],
        refusals: [TokenRefusal], sightings: [UpdateTokenSighting] = [], matches: [MatchRecord] = [],
        ceiling: Int = ActivityPolicy.defaultHighPriorityPerHour,
        lastAnswer: (String) -> TokenAnswers.Answer? = { _ in nil }, now: Date
    ) {
        deviceId = device.id
        app = AppCatalog.appId(ofDevice: device.id).map(String.init) ?? AppCatalog.defaultId
        registeredAt = device.createdAt
        pushToStartToken = token.map {
            Token(token: DirectAddress(stored: $0.token)?.redacted ?? Redact.token($0.token), environment: $0.environment,
                  updatedAt: $0.updatedAt,
                  ageSeconds: max(0, Int(now.timeIntervalSince($0.updatedAt))), lastAnswer: lastAnswer($0.token))
        }
        self.follows = follows.map(\.matchId).sorted()
        let ordered = activities.sorted { a, b in
            if a.isOpen != b.isOpen { return a.isOpen }
            let (started, other) = (a.lifecycle.startedAt ?? .distantPast, b.lifecycle.startedAt ?? .distantPast)
            return started != other ? started > other : a.activityId < b.activityId
        }
        self.activities = ordered.map { record in
            let lifecycle = record.lifecycle
            var attention: [Attention] = []
            if record.phase == .starting, lifecycle.channelId == nil, lifecycle.updateToken == nil,
               let startedAt = lifecycle.startedAt, now.timeIntervalSince(startedAt) >= Self.updateTokenWait.seconds {
                attention.append(Attention(
                    code: "no-update-token",
                    message: "started \(Int(now.timeIntervalSince(startedAt)) / 60) min ago and the app never reported its update "
                        + "token: the start was probably never shown (a push-to-start token from another build or environment, "
                        + "or an app that does not observe pushTokenUpdates)"))
            }
            if record.isOpen, let token = lifecycle.updateToken, let startedAt = lifecycle.startedAt,
               let earlier = activities.first(where: { other in
                   other.activityId != record.activityId && other.lifecycle.updateToken == token
                       && (other.lifecycle.startedAt ?? .distantFuture) < startedAt
               }) {
                attention.append(Attention(
                    code: "update-token-from-earlier-activity",
                    message: "its update token is the one activity \(earlier.activityId) had, which started earlier: the app "
                        + "reported an old activity's token (read each activity's own pushTokenUpdates), so this one's "
                        + "updates reach the old activity, or nothing"))
            }
            let firstSeen = lifecycle.updateToken.flatMap { token in sightings.first { $0.token == token }?.firstSeenAt }
            if record.isOpen, !attention.contains(where: { $0.code == "update-token-from-earlier-activity" }),
               let token = lifecycle.updateToken, let startedAt = lifecycle.startedAt,
               let evidence = Self.olderThanActivity(token: token, startedAt: startedAt, firstSeen: firstSeen, refusals: refusals) {
                attention.append(Attention(
                    code: "update-token-older-than-activity",
                    message: "its update token is older than the activity (\(evidence)): the app reported a token kept "
                        + "from an ended activity, so this one's updates go nowhere"))
            }
            var highPriority: HighPriority?
            if record.isOpen, let match = matches.first(where: { $0.matchId == record.matchId }) {
                let ledger = match.ledger
                let matchCount = ledger.count(at: now)
                highPriority = HighPriority(
                    lastHour: ledger.count(at: now, since: lifecycle.startedAt), matchLastHour: matchCount, ceiling: ceiling,
                    roomAt: matchCount >= ceiling ? ledger.nextRoom(at: now) : nil)
                if matchCount >= ceiling {
                    attention.append(Attention(
                        code: "high-priority-ceiling",
                        message: "its match sent \(matchCount) priority-10 pushes in the last hour (ceiling \(ceiling)): key events go "
                            + "at priority 5 until an older one leaves the hour, so they may show late"))
                }
            }
            return Activity(
                activityId: record.activityId, matchId: record.matchId, phase: record.phase.rawValue,
                startedAt: lifecycle.startedAt, lastSentAt: lifecycle.sentAt, updateToken: lifecycle.updateToken.map(Redact.token),
                updateTokenAgeSeconds: firstSeen.map { max(0, Int(now.timeIntervalSince($0))) },
                updateTokenLastAnswer: lifecycle.updateToken.flatMap(lastAnswer),
                channelId: lifecycle.channelId, highPriority: highPriority, attention: attention)
        }
        self.refusals = refusals.map {
            Refusal(kind: $0.kind.rawValue, token: Redact.token($0.token), activityId: $0.activityId, reason: $0.reason, at: $0.at)
        }
        let highPriorityLastHour = self.activities.reduce(0) { $0 + ($1.highPriority?.lastHour ?? 0) }
        self.highPriorityLastHour = highPriorityLastHour
        var attention: [Attention] = []
        if highPriorityLastHour > ceiling {
            attention.append(Attention(
                code: "device-high-priority-budget",
                message: "its open activities were sent \(highPriorityLastHour) priority-10 pushes in the last hour together, more "
                    + "than the ceiling of \(ceiling) for one activity: iOS keeps one budget per device, so following several "
                    + "live matches at once can spend it, and updates then show late"))
        }
        let recent = refusals.filter { now.timeIntervalSince($0.at) < Self.refusalWindow.seconds }
        if recent.count >= 2 {
            attention.append(Attention(
                code: "repeated-refusals",
                message: "\(recent.count) of its tokens were refused as dead in the last 24 h (latest: \(recent[0].reason)): "
                    + "often a sandbox token sent to production or the other way round, or a build with another bundle id"))
        }
        if token == nil, activities.contains(where: { $0.phase == .waiting }) {
            attention.append(Attention(
                code: "no-push-to-start-token",
                message: "activities wait to start but the device has no push-to-start token (nor an FCM token or Web Push "
                    + "subscription): the app must send one (PUT /v1/devices/{id}/push-to-start-token, /fcm-token or "
                    + "/webpush-subscription) before anything can start remotely"))
        }
        self.attention = attention
    }
}

extension DeviceDiagnostics {
    /// What shows that an activity's update token is older than the activity, if anything does: it was first reported
    /// in a second before the activity started (the activity's start is kept in whole seconds), or refused as dead
    /// before it.
    static func olderThanActivity(token: String, startedAt: Date, firstSeen: Date?, refusals: [TokenRefusal]) -> String? {
        let start = startedAt.timeIntervalSince1970.rounded(.down)
        func before(_ date: Date) -> String {
            let seconds = Int(start - date.timeIntervalSince1970)
            return seconds < 120 ? "\(seconds) s" : "\(seconds / 60) min"
        }
        var evidence: [String] = []
        if let firstSeen, firstSeen.timeIntervalSince1970 < start {
            evidence.append("first reported \(before(firstSeen)) before it started")
        }
        if let refused = refusals.first(where: { $0.kind == .update && $0.token == token && $0.at.timeIntervalSince1970 < start }) {
            evidence.append("refused as dead (\(refused.reason)) \(before(refused.at)) before it started")
        }
        return evidence.isEmpty ? nil : evidence.joined(separator: ", ")
    }
}
