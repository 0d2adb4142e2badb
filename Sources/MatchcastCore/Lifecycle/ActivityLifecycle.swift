import Foundation

/// The life of one Live Activity as a value: an event in, actions out. No I/O, no clock of its own.
///
/// ```
/// waiting ──match in progress──▶ starting ──update token──▶ active ──final / unfollow──▶ ended
///    │        (send start to          │  (hold latest state,      │  (updates: key events now at
///    │         push-to-start)         │   send it on token)       │   priority 10, routine ones
///    └──final before start──▶ ended   └──final: end held─────────▶│   coalesced at priority 5)
/// ```
/// An activity the app started itself is created `active` (adopted). Near Apple's 8-hour limit
/// a live activity is ended and `.restart` asks the manager for a fresh one.
///
/// Broadcast channels (iOS 18): a start from an update that carries the match's `channelId` puts
/// `input-push-channel` in the payload, and the started activity listens on that channel. From then
/// on it sends nothing of its own (the match's `MatchChannel` broadcasts updates and the end to every
/// listener at once); it ends quietly with the match and restarts near the 8-hour limit like any
/// other. Should the app report an update token for it, the token is kept, so an unfollow can still
/// send it an `end`.
public struct ActivityLifecycle: Sendable, Hashable, Codable {
    /// Where the activity stands.
    public enum Phase: String, Sendable, Hashable, Codable {
        case waiting
        case starting
        case active
        case ended
    }

    // The stored fields are laid out to leave no padding between them: a store and the lifecycle manager's cache
    // each keep one lifecycle per open activity, a million of them in a big deployment. The optional dates, stale
    // date and staleness are kept as plain values with a stand-in for "none" (an optional of each would take a
    // word more, mostly padding); the properties below read and write them as optionals. The update token is kept
    // as a `CompactToken` (its 32 bytes, for the usual 64 hex digits), just before the one-byte fields that fill
    // the rest of its last word.
    public let activityId: String
    public let matchId: String
    /// The broadcast channel this activity was started on: its updates come from the channel.
    public internal(set) var channelId: String?
    /// Unix seconds of the last push; the next is strictly later.
    public internal(set) var lastTimestamp: Int
    var sentBox: ContentBox?
    var heldBox: ContentBox?
    var finalBox: ContentBox?
    /// `sentAt`, `startedAt`, `sentStaleDate` and `heldStaleness`, each with its stand-in (`Self.noDate`, …) for nil.
    private var sentAtValue: Date
    private var startedAtValue: Date
    private var sentStaleDateValue: Int
    private var heldStalenessValue: Duration
    /// The token APNs takes the activity's updates on, as kept (compared and handed to deliveries as it is).
    public internal(set) var storedUpdateToken: CompactToken?
    public internal(set) var phase: Phase
    /// The match went final before an update token arrived: `end` goes out with the token.
    public internal(set) var endHeld: Bool

    /// What the device shows now (the last content sent).
    public var sentContent: ContentState? { sentBox?.value }
    /// The newest content not yet sent: no update token yet, or coalesced.
    public var held: ContentState? { heldBox?.value }

    /// `storedUpdateToken`'s text, made on each read.
    public internal(set) var updateToken: String? {
        get { storedUpdateToken?.string }
        set { storedUpdateToken = newValue.map { CompactToken($0) } }
    }

    public internal(set) var sentAt: Date? {
        get { sentAtValue == Self.noDate ? nil : sentAtValue }
        set { sentAtValue = newValue ?? Self.noDate }
    }

    /// The stale-date of the last push, in Unix seconds.
    public internal(set) var sentStaleDate: Int? {
        get { sentStaleDateValue == Self.noStaleDate ? nil : sentStaleDateValue }
        set { sentStaleDateValue = newValue ?? Self.noStaleDate }
    }

    public internal(set) var startedAt: Date? {
        get { startedAtValue == Self.noDate ? nil : startedAtValue }
        set { startedAtValue = newValue ?? Self.noDate }
    }

    /// Staleness window of the held content.
    var heldStaleness: Duration? {
        get { heldStalenessValue == Self.noStaleness ? nil : heldStalenessValue }
        set { heldStalenessValue = newValue ?? Self.noStaleness }
    }

    /// Stand-ins for "none": values no clock, feed or policy gives (a date or staleness decoded from JSON is finite,
    /// and a stale date is a Unix time).
    private static let noDate = Date(timeIntervalSinceReferenceDate: -.infinity)
    private static let noStaleDate = Int.min
    private static let noStaleness = Duration(secondsComponent: Int64.min / 2, attosecondsComponent: 0)

    /// A follow that will start when its match is in progress.
    public init(activityId: String, matchId: String) {
        self.activityId = activityId
        self.matchId = matchId
        lastTimestamp = 0
        sentAtValue = Self.noDate
        startedAtValue = Self.noDate
        sentStaleDateValue = Self.noStaleDate
        heldStalenessValue = Self.noStaleness
        phase = .waiting
        endHeld = false
    }

    /// An activity the app started itself and reported with its update token.
    public static func adopted(activityId: String, matchId: String, updateToken: String, now: Date) -> ActivityLifecycle {
        var lifecycle = ActivityLifecycle(activityId: activityId, matchId: matchId)
        lifecycle.phase = .active
        lifecycle.updateToken = updateToken
        lifecycle.startedAt = now
        return lifecycle
    }

    // MARK: Events

    /// The match changed (or, with the same content, was polled again).
    public mutating func matchChanged(_ update: MatchUpdate, now: Date, policy: ActivityPolicy) -> [ActivityAction] {
        var scratch = UpdateScratch()
        matchChanged(update, now: now, policy: policy, scratch: &scratch)
        return scratch.actions
    }

    /// The same, for one activity of a fan-out: the actions go into `scratch.actions` (replacing the last activity's,
    /// in the same buffer), and an update's `aps` is the last activity's instance when it reads the same
    /// (`UpdateScratch`).
    public mutating func matchChanged(_ update: MatchUpdate, now: Date, policy: ActivityPolicy, scratch: inout UpdateScratch) {
        scratch.actions.removeAll(keepingCapacity: true)
        let staleness = policy.staleness(pollInterval: update.pollInterval)
        switch phase {
        case .ended:
            return
        case .waiting:
            if update.status.isFinal || update.status == .postponed {
                phase = .ended
                scratch.actions.append(.finished)
                return
            }
            guard update.status.isInProgress else { return }
            scratch.actions.append(start(update, now: now, policy: policy, staleness: staleness))
        case .starting, .active:
            if channelId != nil {
                // Listening on the channel: the match's broadcast updates and ends it.
                guard update.status.isFinal else { return }
                phase = .ended
                heldBox = nil
                scratch.actions.append(.finished)
                return
            }
            if update.status.isFinal {
                scratch.actions += finish(content: update.contentBox, alert: update.alert, now: now, policy: policy)
                return
            }
            guard phase == .active, let token = storedUpdateToken else {
                hold(update.contentBox, staleness: staleness)
                return
            }
            if !update.keyEvents.isEmpty {
                scratch.send(sendUpdate(update.contentBox, alert: update.alert, priority: update.keyEventPriority, token: token,
                                        now: now, staleness: staleness, like: scratch.lastUpdate))
                return
            }
            // Back to what the device shows (a goal ruled out): a held, superseded change must not be flushed.
            guard update.contentBox != sentBox else { heldBox = nil; heldStaleness = nil; return }
            if let sentAt, now < sentAt.addingTimeInterval(policy.coalesceInterval.seconds) {
                hold(update.contentBox, staleness: staleness)
                return
            }
            scratch.send(sendUpdate(update.contentBox, alert: nil, priority: 5, token: token, now: now, staleness: staleness,
                                    like: scratch.lastUpdate))
        }
    }

    /// The app reported (or rotated) this activity's update token.
    public mutating func updateTokenRegistered(_ token: String, now: Date, policy: ActivityPolicy) -> [ActivityAction] {
        let token = CompactToken(token)
        switch phase {
        case .ended:
            return []
        case .waiting:
            // The app started the activity before the match went live: adopt it.
            phase = .active
            storedUpdateToken = token
            startedAt = startedAt ?? now
            return []
        case .starting, .active:
            storedUpdateToken = token
            phase = .active
            // A channel listener keeps its updates from the channel; the token only serves an unfollow's end.
            if channelId != nil { return [] }
            if endHeld {
                return finish(content: finalBox ?? heldBox ?? sentBox, alert: nil, now: now, policy: policy)
            }
            guard let content = heldBox, content != sentBox else {
                heldBox = nil
                return []
            }
            let staleness = heldStaleness ?? policy.minimumStaleness
            return [.send(sendUpdate(content, alert: nil, priority: 5, token: token, now: now, staleness: staleness))]
        }
    }

    /// The activity ends before its match does.
    public mutating func end(_ reason: ActivityEndReason, now: Date) -> [ActivityAction] {
        guard phase != .ended else { return [] }
        defer { phase = .ended; heldBox = nil }
        if reason == .unfollowed, phase == .active, let token = storedUpdateToken, let content = heldBox ?? sentBox {
            let intent = endIntent(content: content, alert: nil, dismissal: now, token: token, now: now)
            return [.send(intent), .finished]
        }
        return [.finished]
    }

    /// APNs refused the push-to-start token the start went to (410, `BadDeviceToken`): the activity never reached
    /// the device. It waits again, to start with the device's next push-to-start token; or it ends, if the match
    /// ended meanwhile. Only a start still waiting for its update token is taken back: once the app reported one,
    /// the activity is on the device.
    public mutating func startRejected() -> [ActivityAction] {
        guard phase == .starting, storedUpdateToken == nil else { return [] }
        return takeBack()
    }

    /// The start just sent went to a device's `DirectAddress` (FCM, Web Push), which updates and ends the activity
    /// through the same address: the activity is active at once, on `token` (`DirectAddress.activityToken(for:)`),
    /// with no token to wait for. Such a device listens on no broadcast channel, so the activity takes none.
    public mutating func startedDirect(token: String) {
        guard phase == .starting else { return }
        phase = .active
        updateToken = token
        channelId = nil
    }

    /// The device's `DirectAddress` is dead (FCM `UNREGISTERED`, Web Push 404/410): an activity started through it is
    /// no longer on any screen. It waits again, to start afresh with the device's next address; or it ends, if the
    /// match ended meanwhile.
    public mutating func addressLost() -> [ActivityAction] {
        guard phase == .starting || phase == .active, let storedUpdateToken, DirectAddress.isDirect(storedUpdateToken) else {
            return []
        }
        return takeBack()
    }

    /// Back to waiting, as if never started (ended instead when the match is over).
    private mutating func takeBack() -> [ActivityAction] {
        let matchOver = endHeld
        sentBox = nil
        sentAt = nil
        sentStaleDate = nil
        startedAt = nil
        heldBox = nil
        heldStaleness = nil
        endHeld = false
        finalBox = nil
        channelId = nil
        updateToken = nil
        if matchOver {
            phase = .ended
            return [.finished]
        }
        phase = .waiting
        return []
    }

    /// Time passed: flush a coalesced update, restart near the 8-hour limit, refresh a stale-date
    /// that is about to pass while the match is unchanged.
    ///
    /// `feedIsFresh` says whether the match's feed answered lately: the stale-date is only moved
    /// forward while it does, so a dead feed shows as stale on the device.
    public mutating func tick(now: Date, policy: ActivityPolicy, feedIsFresh: Bool = true) -> [ActivityAction] {
        guard phase == .active || phase == .starting else { return [] }
        // When the 8-hour limit counts from; never for an activity without one.
        let limitFrom = restartsNearTheLimit ? startedAt : nil
        if let limitFrom, now >= limitFrom.addingTimeInterval(policy.restartAfter.seconds), endHeld {
            // The match ended but no update token ever came; Apple has ended the activity by now.
            phase = .ended
            heldBox = nil
            return [.finished]
        }
        if let limitFrom, now >= limitFrom.addingTimeInterval(policy.restartAfter.seconds) {
            var actions: [ActivityAction] = []
            if phase == .active, let token = storedUpdateToken, let content = heldBox ?? sentBox {
                actions.append(.send(endIntent(content: content, alert: nil, dismissal: now, token: token, now: now)))
            }
            phase = .ended
            heldBox = nil
            return actions + [.restart]
        }
        guard phase == .active, channelId == nil, let token = storedUpdateToken else { return [] }
        if let content = heldBox, let due = coalesceDue(policy), now >= due {
            return [.send(sendUpdate(content, alert: nil, priority: 5, token: token, now: now,
                                     staleness: heldStaleness ?? policy.minimumStaleness))]
        }
        if heldBox == nil, feedIsFresh, let content = sentBox, let due = refreshDue(policy), now >= due {
            return [.send(sendUpdate(content, alert: nil, priority: 5, token: token, now: now, staleness: policy.minimumStaleness))]
        }
        return []
    }

    /// When `tick` next has something to do, if ever.
    public func nextDeadline(policy: ActivityPolicy, feedIsFresh: Bool = true) -> Date? {
        guard phase == .active || phase == .starting else { return nil }
        let restart = restartsNearTheLimit ? startedAt.map { $0.addingTimeInterval(policy.restartAfter.seconds) } : nil
        if channelId != nil { return restart }
        // Compared one by one, not through an array: a fan-out asks this of every activity it changes.
        var due = restart
        if phase == .active, let other = heldBox != nil ? coalesceDue(policy) : feedIsFresh ? refreshDue(policy) : nil {
            due = due.map { min($0, other) } ?? other
        }
        return due
    }

    /// Whether the activity is ended and started afresh near Apple's 8-hour limit: a Live Activity's. An Android or
    /// web device's (its token on a `DirectAddress`) has no such limit: its notification stays up for the whole match
    /// (an ODI, a five-set final), rather than being dismissed and shown again.
    var restartsNearTheLimit: Bool {
        guard let storedUpdateToken else { return true }
        return !DirectAddress.isDirect(storedUpdateToken)
    }

    /// What an event may change without sending anything (content held or dropped, an end held for
    /// the token), with the phase. When an event returns no actions and this is the same before and
    /// after, the lifecycle did not change and there is nothing to save. Cheaper to take than a copy
    /// of the lifecycle: no per-activity strings, only boxes shared by every activity of an update.
    public struct QuietState: Equatable, Sendable {
        fileprivate let phase: Phase
        fileprivate let held: ContentBox?
        fileprivate let heldStaleness: Duration?
        fileprivate let endHeld: Bool
        fileprivate let final: ContentBox?
    }

    public var quietState: QuietState {
        QuietState(phase: phase, held: heldBox, heldStaleness: heldStaleness, endHeld: endHeld, final: finalBox)
    }

    /// What a match update leaves alone when it only changes what the activity shows or holds back: its phase,
    /// token, start, held end, final content and channel. A fan-out compares it before and after each activity
    /// takes the update; equal, the activity changed only as every other one of its match did.
    public struct Standing: Equatable, Sendable {
        fileprivate let phase: Phase
        fileprivate let updateToken: CompactToken?
        fileprivate let startedAt: Date?
        fileprivate let endHeld: Bool
        fileprivate let final: ContentBox?
        fileprivate let channelId: String?
    }

    public var standing: Standing {
        Standing(phase: phase, updateToken: storedUpdateToken, startedAt: startedAt, endHeld: endHeld, final: finalBox,
                 channelId: channelId)
    }

    /// Becomes `later`, a later state of this same activity (same ids): `self = later`, except that a field
    /// already holding the same string or box is left alone. A store that keeps its own copy of every activity
    /// saves a fan-out's 100,000 changes this way without touching each activity's id, match and token strings:
    /// a whole-value assignment retains and releases every one of them, and for 100,000 activities those are
    /// cache misses as much as atomic operations.
    public mutating func catchUp(to later: ActivityLifecycle) {
        assert(activityId == later.activityId && matchId == later.matchId, "catchUp(to:) is for the same activity")
        phase = later.phase
        if storedUpdateToken != later.storedUpdateToken { storedUpdateToken = later.storedUpdateToken }
        lastTimestamp = later.lastTimestamp
        if sentBox !== later.sentBox { sentBox = later.sentBox }
        sentAtValue = later.sentAtValue
        sentStaleDateValue = later.sentStaleDateValue
        startedAtValue = later.startedAtValue
        if heldBox !== later.heldBox { heldBox = later.heldBox }
        heldStalenessValue = later.heldStalenessValue
        endHeld = later.endHeld
        if finalBox !== later.finalBox { finalBox = later.finalBox }
        if channelId != later.channelId { channelId = later.channelId }
        // A stored field added to the lifecycle and not above fails here, in every debug build that saves one.
        assert(self == later, "catchUp(to:) missed a field")
    }

    // The JSON form: the fields under the names they had before they were boxed, optional ones left out when nil.
    private enum CodingKeys: String, CodingKey {
        case activityId, matchId, phase, updateToken, lastTimestamp, sentAt, sentStaleDate, startedAt
        case heldStaleness, endHeld, channelId
        case sentBox = "sentContent"
        case heldBox = "held"
        case finalBox = "finalContent"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(activityId: try container.decode(String.self, forKey: .activityId),
                  matchId: try container.decode(String.self, forKey: .matchId))
        phase = try container.decode(Phase.self, forKey: .phase)
        updateToken = try container.decodeIfPresent(String.self, forKey: .updateToken)
        lastTimestamp = try container.decode(Int.self, forKey: .lastTimestamp)
        sentBox = try container.decodeIfPresent(ContentBox.self, forKey: .sentBox)
        sentAt = try container.decodeIfPresent(Date.self, forKey: .sentAt)
        sentStaleDate = try container.decodeIfPresent(Int.self, forKey: .sentStaleDate)
        startedAt = try container.decodeIfPresent(Date.self, forKey: .startedAt)
        heldBox = try container.decodeIfPresent(ContentBox.self, forKey: .heldBox)
        heldStaleness = try container.decodeIfPresent(Duration.self, forKey: .heldStaleness)
        endHeld = try container.decode(Bool.self, forKey: .endHeld)
        finalBox = try container.decodeIfPresent(ContentBox.self, forKey: .finalBox)
        channelId = try container.decodeIfPresent(String.self, forKey: .channelId)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(activityId, forKey: .activityId)
        try container.encode(matchId, forKey: .matchId)
        try container.encode(phase, forKey: .phase)
        try container.encodeIfPresent(updateToken, forKey: .updateToken)
        try container.encode(lastTimestamp, forKey: .lastTimestamp)
        try container.encodeIfPresent(sentBox, forKey: .sentBox)
        try container.encodeIfPresent(sentAt, forKey: .sentAt)
        try container.encodeIfPresent(sentStaleDate, forKey: .sentStaleDate)
        try container.encodeIfPresent(startedAt, forKey: .startedAt)
        try container.encodeIfPresent(heldBox, forKey: .heldBox)
        try container.encodeIfPresent(heldStaleness, forKey: .heldStaleness)
        try container.encode(endHeld, forKey: .endHeld)
        try container.encodeIfPresent(finalBox, forKey: .finalBox)
        try container.encodeIfPresent(channelId, forKey: .channelId)
    }

    // MARK: Internals

    private func coalesceDue(_ policy: ActivityPolicy) -> Date? {
        sentAt.map { $0.addingTimeInterval(policy.coalesceInterval.seconds) } ?? .distantPast
    }

    /// Re-send the unchanged state when half the stale window is gone, so a quiet but healthy
    /// match (a rain delay, a lunch break) is not shown as stale.
    private func refreshDue(_ policy: ActivityPolicy) -> Date? {
        guard let sentAt, let stale = sentStaleDate else { return nil }
        let window = Double(stale) - sentAt.timeIntervalSince1970
        return sentAt.addingTimeInterval(max(window / 2, 1))
    }

    private mutating func hold(_ content: ContentBox, staleness: Duration) {
        heldBox = content
        heldStaleness = staleness
    }

    private mutating func timestamp(_ now: Date) -> Int {
        lastTimestamp = max(Int(now.timeIntervalSince1970), lastTimestamp + 1)
        return lastTimestamp
    }

    private mutating func start(_ update: MatchUpdate, now: Date, policy: ActivityPolicy, staleness: Duration) -> ActivityAction {
        phase = .starting
        startedAt = now
        let ts = timestamp(now)
        let stale = ts + Int(staleness.seconds)
        let alert = update.alert ?? APS.Alert(
            title: update.content.summary, body: "\(update.snapshot.home.name) v \(update.snapshot.away.name)")
        var aps = APS(
            timestamp: ts, event: .start, content: update.contentBox, staleDate: stale, alert: alert,
            attributes: ActivityAttributes(activityId: activityId, snapshot: update.snapshot))
        if let channel = update.channelId {
            aps.inputPushChannel = channel
            channelId = channel
        }
        sentBox = update.contentBox
        sentAt = now
        sentStaleDate = stale
        return .send(PushIntent(recipient: .pushToStart, aps: aps, priority: 10,
                                expiration: ts + Int(policy.startExpiration.seconds)))
    }

    /// An update push; its `aps` is `previous` when that reads the same (another activity's in the same fan-out).
    private mutating func sendUpdate(
        _ content: ContentBox, alert: APS.Alert?, priority: Int, token: CompactToken, now: Date, staleness: Duration,
        like previous: APS? = nil
    ) -> PushIntent {
        let ts = timestamp(now)
        let stale = ts + Int(staleness.seconds)
        sentBox = content
        sentAt = now
        sentStaleDate = stale
        heldBox = nil
        heldStaleness = nil
        let aps = previous.flatMap { $0.isUpdate(timestamp: ts, content: content, staleDate: stale, alert: alert) ? $0 : nil }
            ?? APS(timestamp: ts, event: .update, content: content, staleDate: stale, alert: alert)
        return PushIntent(recipient: .updateToken(token), aps: aps, priority: priority, expiration: stale)
    }

    private mutating func finish(content: ContentBox?, alert: APS.Alert?, now: Date, policy: ActivityPolicy) -> [ActivityAction] {
        guard phase == .active, let token = storedUpdateToken else {
            endHeld = true
            finalBox = content
            return []
        }
        let content = content ?? sentBox ?? heldBox
        guard let content else {
            phase = .ended
            return [.finished]
        }
        let intent = endIntent(content: content, alert: alert, dismissal: now.addingTimeInterval(policy.dismissalDelay.seconds),
                               token: token, now: now)
        phase = .ended
        heldBox = nil
        endHeld = false
        return [.send(intent), .finished]
    }

    private mutating func endIntent(content: ContentBox, alert: APS.Alert?, dismissal: Date, token: CompactToken, now: Date) -> PushIntent {
        let ts = timestamp(now)
        sentBox = content
        sentAt = now
        let aps = APS(timestamp: ts, event: .end, content: content,
                      dismissalDate: max(Int(dismissal.timeIntervalSince1970), ts), alert: alert)
        return PushIntent(recipient: .updateToken(token), aps: aps, priority: 10,
                          expiration: ts + Int(ActivityPolicy.endExpiration.seconds))
    }
}

extension Duration {
    /// The duration in (fractional) seconds.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
