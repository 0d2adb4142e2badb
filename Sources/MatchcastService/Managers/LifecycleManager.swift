import CoreMetrics
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastStore

/// Runs every activity's state machine: feeds it match updates, token arrivals, unfollows and
/// time; turns its actions into deliveries; persists what changed. The only place that decides
/// when an activity starts, updates or ends is `ActivityLifecycle`; this actor executes.
///
/// Open activities are cached per match (loaded from the store on first use or at `restore`),
/// so a fan-out reads no rows. Each operation saves the activities it changed together with the
/// deliveries they produced (the store's outbox, one transaction), then hands the deliveries to the
/// `DeliveryRelay`: what the devices were sent and what the store says they were sent never part.
/// A fan-out does this in chunks, in order, each saved and handed on while the next is worked out.
///
/// This file holds the state, match updates, restart, replicas and the internals every command shares; the fan-out,
/// follows and update tokens are in `LifecycleManager+FanOut.swift`, `+Follows.swift` and `+Tokens.swift`.
public actor LifecycleManager {
    /// Activities changed by one operation, each once (the last version), in the order first changed.
    struct ChangeSet {
        private var records: [ActivityRecord] = []
        /// Where each activity is in `records`.
        private var positions: [String: Int] = [:]
        /// Positions of the records a fan-out moved without changing anything but what they show or hold back.
        private(set) var moved: [Int] = []
        /// False: moved records are left out, for a store that does not keep what activities show
        /// (`MatchcastStore.keepsActivityContent`).
        private let keepsMoved: Bool

        init(capacity: Int = 0, keepsMoved: Bool = true) {
            self.keepsMoved = keepsMoved
            records.reserveCapacity(capacity)
            positions.reserveCapacity(capacity)
        }

        mutating func append(_ record: ActivityRecord) {
            // An activity saved twice in a row (a restart, an adoption) is the common repeat.
            if let last = records.last, last.activityId == record.activityId {
                records[records.count - 1] = record
            } else if let at = positions.updateValue(records.count, forKey: record.activityId) {
                positions[record.activityId] = at
                records[at] = record
            } else {
                records.append(record)
            }
        }

        /// An activity the caller knows is not in the set yet (a fan-out visits each activity once): no index kept.
        /// A later `append` of the same activity would not find it, so a set filled this way takes no `append` of it.
        mutating func appendNew(_ record: ActivityRecord, moved isMoved: Bool = false) {
            if isMoved {
                guard keepsMoved else { return }
                moved.append(records.count)
            }
            records.append(record)
        }

        /// The sent state a fan-out chunk's activities share: that of its first moved record, failing that of its
        /// first open one; nil when it changed none.
        var sharedState: FanOutState? {
            if let first = moved.first { return FanOutState(records[first]) }
            return records.first(where: \.isOpen).map(FanOutState.init)
        }

        /// The chunk described to the store as sharing `state`: its moved records at `state` move with it; any
        /// other record (a moved one at another state included) is written whole.
        func share(_ state: FanOutState, from: String, through: String?) -> FanOutShare {
            let moved = moved.filter { state.describes(records[$0]) }
            return FanOutShare(state: state, moved: moved, from: from, through: through)
        }

        var isEmpty: Bool { records.isEmpty }
        var count: Int { records.count }
        var all: [ActivityRecord] { records }
    }

    /// What the manager knows of one match, behind one reference: every `matches[id]?.field` read through the
    /// dictionary's getter copies the value it holds, and as a struct that was the tracker and the cache whole (a
    /// few dozen retains and releases, several per changed poll). Never handed out of the actor.
    final class MatchState {
        var tracker = MatchTracker()
        var lastSeq: Int?
        /// The match's open activities, once loaded from the store.
        var cache: ActivityCache?
        /// A fan-out failed part-way: the latest update goes out again (from the store's state) at the next tick.
        var fanOutPending = false
    }

    let store: any MatchcastStore
    let relay: DeliveryRelay
    /// The matches this replica runs (every match, solo); writes about a match carry its lease as a fence.
    public nonisolated let ownership: MatchOwnership
    /// When each match's feed last answered and whether it needs a source: read by every poll without a hop here.
    public nonisolated let pollFacts = MatchPollFacts()
    let settings: BrokerSettings
    let metrics: BrokerMetrics
    /// `BrokerMetrics.fanOutDuration()`, made once.
    let fanOutDuration: CoreMetrics.Timer
    let now: @Sendable () -> Date
    let logger: Logger
    var builder: DeliveryBuilder
    /// The apps served (`settings.apps`, made once): each delivery's topic is its device's app's.
    let apps: AppCatalog
    var matches: [String: MatchState] = [:]
    /// Broadcast channel mode, when on (`useBroadcastChannels`, LifecycleManager+Broadcast.swift).
    var broadcast: BroadcastChannels?
    /// Earliest time the next push-to-start may go to each device.
    var startGate: [String: Date] = [:]
    /// Commands that change a match's activities run one at a time per match; those of different matches side by
    /// side, their store writes overlapping (`MatchGates`). A restore keeps every match out.
    let gates = MatchGates()
    /// Follows waiting for their match's gate, run together by the first of the match through it.
    var followQueue = GateQueue<QueuedFollow, Following>()
    /// Update tokens waiting for their match's gate, registered together by the first of the match through it.
    var tokenQueue = GateQueue<QueuedToken, ActivityRecord>()
    /// Update tokens registered and not yet noted in the store (`noteSightings`).
    var pendingSightings: [UpdateTokenSighting] = []

    /// Delivers through `relay` (the broker's, in the background).
    public init(
        store: any MatchcastStore, relay: DeliveryRelay, ownership: MatchOwnership = .solo, settings: BrokerSettings,
        metrics: BrokerMetrics, now: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.store = store
        self.relay = relay
        self.ownership = ownership
        self.settings = settings
        self.metrics = metrics
        fanOutDuration = metrics.fanOutDuration()
        self.now = now
        self.logger = logger
        builder = DeliveryBuilder(bundleId: settings.bundleId, seed: settings.seed)
        apps = settings.apps
    }

    /// Delivers inline: every operation returns once the sinks have its deliveries (replay, `follow`, tests).
    public init(
        store: any MatchcastStore, dispatcher: DeliveryDispatcher, ownership: MatchOwnership = .solo,
        settings: BrokerSettings, metrics: BrokerMetrics, now: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.init(
            store: store,
            relay: DeliveryRelay(store: store, dispatcher: dispatcher, mode: .inline, metrics: metrics, logger: logger),
            ownership: ownership, settings: settings, metrics: metrics, now: now, logger: logger)
    }

    var policy: ActivityPolicy { settings.activityPolicy }

    // MARK: Matches

    /// A snapshot from any source. Stale ones (lower `seq`) are ignored; a snapshot that cannot be
    /// rendered is counted and skipped; the match's activities get what their lifecycles decide.
    /// Returns the update fanned out, or nil when nothing a device shows changed.
    @discardableResult
    public func ingest(_ snapshot: MatchSnapshot, pollInterval: Duration) async throws(ServiceError) -> MatchUpdate? {
        await gates.enter(snapshot.id)
        defer { gates.leave(snapshot.id) }
        // Its tracker and sequence, read through the one reference (its activities stay where they are).
        let known = matches[snapshot.id]
        let storedSeq = known?.lastSeq
        if let seq = snapshot.seq, let last = storedSeq, seq < last { return nil }
        let stored = known?.tracker
        var tracker = stored ?? MatchTracker()
        let update: MatchUpdate?
        do {
            update = try tracker.ingest(
                snapshot, pollInterval: pollInterval, at: now(), highPriorityPerHour: policy.highPriorityPerHour)
        } catch {
            metrics.feedError(reason: "render")
            logger.warning("snapshot skipped", metadata: ["match": "\(snapshot.id)", "error": "\(error)"])
            return nil
        }
        // The tracker moves on (a change's fan-out reads it), and back when the change's match row was not saved.
        let state = known ?? state(of: snapshot.id)
        state.tracker = tracker
        state.lastSeq = snapshot.seq ?? storedSeq
        pollFacts.answered(snapshot.id, at: now())
        guard let update else {
            pollFacts.record(snapshot.id, status: tracker.current?.snapshot.status)
            return nil
        }
        // The match's row is saved with the fan-out's first chunk (one transaction), or alone when the fan-out saves
        // nothing. A failed save leaves the tracker where it was, so the same snapshot polled again is still news.
        let record = MatchRecord(snapshot: snapshot, updatedAt: now(), highPrioritySends: tracker.ledger.sends)
        let carry = MatchRowCarry(record)
        do {
            try await fanOut(update, to: snapshot.id, carrying: carry)
            if let alone = carry.take() {
                try await persist { try await self.store.saveMatch(alone) }
                carry.saved()
            }
        } catch {
            // Saved with a chunk before a later one failed (`fanOutFailed`): the tracker stays with the saved row.
            if carry.isSaved {
                changeSaved(update, snapshot.id, tracker, status: snapshot.status)
            } else {
                matchNotSaved(snapshot.id, tracker: stored, lastSeq: storedSeq)
            }
            throw error
        }
        changeSaved(update, snapshot.id, tracker, status: snapshot.status)
        return update
    }

    /// A change whose match row was not saved: the match's tracker and sequence go back to where they were.
    private func matchNotSaved(_ matchId: String, tracker: MatchTracker?, lastSeq: Int?) {
        guard matches[matchId] != nil else { return }  // forgotten meanwhile (the lease was lost)
        matches[matchId]?.tracker = tracker ?? MatchTracker()
        matches[matchId]?.lastSeq = lastSeq
    }

    /// A change saved: its key events counted, its status noted.
    private func changeSaved(_ update: MatchUpdate, _ matchId: String, _ tracker: MatchTracker, status: MatchStatus) {
        if !update.keyEvents.isEmpty {
            metrics.keyEventUpdate(priority: update.keyEventPriority)
            if update.keyEventPriority != 10 {
                logger.notice("key event sent at priority 5: the match's hourly ceiling of priority-10 pushes is spent", metadata: [
                    "match": "\(matchId)", "ceiling": "\(policy.highPriorityPerHour)",
                    "room_at": "\(tracker.ledger.nextRoom(at: now()).map { "\($0)" } ?? "-")",
                ])
            }
        }
        pollFacts.record(matchId, status: status)
    }

    /// The feed answered for this match without a change: its activities' stale-dates may move on. No hop onto this
    /// actor: a poll whose answer is unchanged records it and goes on.
    public nonisolated func feedAnswered(matchId: String) {
        pollFacts.answered(matchId, at: now())
    }

    /// Whether the match's feed answered within the minimum staleness window.
    func feedIsFresh(_ matchId: String, at moment: Date) -> Bool {
        pollFacts.answeredRecently(matchId, at: moment, within: policy.minimumStaleness)
    }

    /// The latest update of a match, if it has been seen.
    public func latest(matchId: String) -> MatchUpdate? {
        matches[matchId]?.tracker.latest
    }

    /// Whether a match is known to be over (no need to poll it).
    public func isFinal(matchId: String) -> Bool {
        matches[matchId]?.tracker.current?.snapshot.status.isFinal ?? false
    }


    // MARK: Activities

    /// The user dismissed the activity: stop pushing, send nothing.
    public func dismiss(activityId: String, deviceId: String) async throws(ServiceError) {
        // The stored record names the match (and the device, neither of which changes); its state is the cache's,
        // read inside the match's gate: an operation on the match may have ended the activity meanwhile.
        guard let stored = try await persist({ try await self.store.activity(id: activityId) }) else {
            throw ServiceError(.notFound, "no activity \(activityId)")
        }
        guard stored.deviceId == deviceId else { throw ServiceError(.forbidden, "activity belongs to another device") }
        await gates.enter(stored.matchId)
        defer { gates.leave(stored.matchId) }
        try await loadActivities(matchId: stored.matchId)
        // Not open any more: nothing to end.
        guard let open = matches[stored.matchId]?.cache?[activityId] else { return }
        try await end(open, reason: .dismissed)
    }

    /// An update token is dead (APNs 410, feedback): its activity ends, nothing more goes to it.
    @discardableResult
    public func invalidate(updateToken token: String) async throws(ServiceError) -> Bool {
        // The stored record names the activity and its match; its state is the cache's, read inside the match's gate:
        // an operation on the match may have ended the activity, or given it another token, meanwhile.
        guard let stored = try await persist({ try await self.store.activity(updateToken: token) }), stored.isOpen else {
            return false
        }
        await gates.enter(stored.matchId)
        defer { gates.leave(stored.matchId) }
        try await loadActivities(matchId: stored.matchId)
        guard let open = matches[stored.matchId]?.cache?[stored.activityId], open.updateToken == token else { return false }
        try await end(open, reason: .tokenInvalid)
        return true
    }

    /// A device's push-to-start token arrived or changed: its waiting activities of live matches may start. For an
    /// Android or web device (a `DirectAddress`), its started activities move to the new address, and what they held
    /// back goes there.
    /// `followed`: the matches the device follows, when the caller read them already (nil: read here).
    public func pushToStartTokenChanged(deviceId: String, followed: [String]? = nil) async throws(ServiceError) {
        let matchIds = try await knownMatches(followedBy: deviceId, among: followed)
        guard !matchIds.isEmpty else { return }
        let address = try await directAddress(deviceId: deviceId)
        for matchId in matchIds {
            await gates.enter(matchId)
            defer { gates.leave(matchId) }
            var deliveries: [Delivery] = []
            var changed = ChangeSet()
            try await loadActivities(matchId: matchId)
            let latest = latest(matchId: matchId)
            for var record in matches[matchId]?.cache?.records(deviceId: deviceId) ?? [] {
                switch record.phase {
                case .waiting:
                    guard let latest, latest.status.isInProgress, try await mayAct(on: record) else { continue }
                    try await execute(record.lifecycle.matchChanged(latest, now: now(), policy: policy),
                                      on: &record, into: &deliveries, changed: &changed)
                case .starting, .active:
                    guard let address, let token = record.updateToken, DirectAddress.isDirect(token),
                          !address.holds(activityToken: token)
                    else { continue }
                    let moved = address.activityToken(for: record.activityId)
                    try await execute(record.lifecycle.updateTokenRegistered(moved, now: now(), policy: policy),
                                      on: &record, into: &deliveries, changed: &changed)
                case .ended:
                    continue
                }
            }
            try await finish(deliveries, changed)
        }
    }

    /// A device's push-to-start token was refused (dead). APNs: its activities whose start went there and never
    /// arrived (`starting`, no update token yet) wait again for the device's next token
    /// (`ActivityLifecycle.startRejected`). An Android or web device's dead address takes every activity on it off the
    /// screen: those wait again too (`ActivityLifecycle.addressLost`), all but any already on the device's next address.
    public func pushToStartTokenRejected(deviceId: String, followed: [String]? = nil) async throws(ServiceError) {
        let matchIds = try await knownMatches(followedBy: deviceId, among: followed)
        guard !matchIds.isEmpty else { return }
        let current = try await directAddress(deviceId: deviceId)
        for matchId in matchIds {
            await gates.enter(matchId)
            defer { gates.leave(matchId) }
            try await loadActivities(matchId: matchId)
            var deliveries: [Delivery] = []
            var changed = ChangeSet()
            for var record in matches[matchId]?.cache?.records(deviceId: deviceId) ?? [] where record.isOpen {
                if let token = record.updateToken, DirectAddress.isDirect(token) {
                    if current?.holds(activityToken: token) == true { continue }
                    try await execute(record.lifecycle.addressLost(), on: &record, into: &deliveries, changed: &changed)
                } else if record.phase == .starting {
                    try await execute(record.lifecycle.startRejected(), on: &record, into: &deliveries, changed: &changed)
                }
            }
            try await finish(deliveries, changed)
        }
    }

    /// The device's Android or web address, if that is what it has in place of a push-to-start token.
    private func directAddress(deviceId: String) async throws(ServiceError) -> DirectAddress? {
        let token = try await persist { try await self.store.pushToStartToken(deviceId: deviceId) }
        return token.flatMap { DirectAddress(stored: $0.token) }
    }

    /// The matches this manager knows that the device follows, sorted: where its activities are (an open activity
    /// always goes with a follow), found from its few follows rather than by looking through every match.
    /// `followed`, when given, is what the store says the device follows, read by the caller.
    func knownMatches(followedBy deviceId: String, among followed: [String]? = nil) async throws(ServiceError) -> [String] {
        let matchIds = if let followed { followed } else {
            try await persist { try await self.store.follows(deviceId: deviceId) }.map(\.matchId)
        }
        return matchIds.filter { matches.index(forKey: $0) != nil }.sorted()
    }

    /// Time passed: coalesced flushes, stale-date refreshes, 8-hour restarts, starts that waited
    /// for the push-to-start spacing, and in channel mode the channels' own. Each match is looked at inside its gate,
    /// one after the other; a match busy with another operation (a long fan-out, a batch of follows) is looked at
    /// after all the others, so it delays none of them. Returns when it next has something to do.
    public func tick() async throws(ServiceError) -> Date? {
        var next: Date?
        var matchIds = Array(matches.keys)
        // Channel mode: the matches with an open channel (one may have no activities left here).
        let channels = Set(await broadcast?.openMatchIds() ?? [])
        matchIds += channels.filter { matches.index(forKey: $0) == nil }
        var busy: [String] = []
        for matchId in matchIds.sorted() {
            guard gates.tryEnter(matchId) else {
                busy.append(matchId)
                continue
            }
            defer { gates.leave(matchId) }
            // The time once inside the gate: an operation on the match that ran until now has changed it as of now.
            let due = try await tick(matchId: matchId, at: now(), channel: channels.contains(matchId))
            if let due { next = min(next ?? due, due) }
        }
        for matchId in busy {
            await gates.enter(matchId)
            defer { gates.leave(matchId) }
            let due = try await tick(matchId: matchId, at: now(), channel: channels.contains(matchId))
            if let due { next = min(next ?? due, due) }
        }
        let moment = now()
        startGate = startGate.filter { $0.value > moment }
        await flushSightings()
        return next
    }

    /// One match's part of `tick`, inside its gate (`channel`: the match has an open broadcast channel): when it next
    /// has something to do.
    func tick(matchId: String, at moment: Date, channel: Bool) async throws(ServiceError) -> Date? {
        if matches[matchId]?.fanOutPending == true {
            do {
                try await reload(matchId: matchId)
            } catch {
                logger.warning("fan-out retry failed", metadata: ["match": "\(matchId)", "error": "\(error)"])
                return moment.addingTimeInterval(1)
            }
        }
        let fresh = feedIsFresh(matchId, at: moment)
        var next = channel ? try await tickChannel(matchId: matchId, fresh: fresh) : nil
        // A match none of whose activities has anything due is not walked.
        if let state = matches[matchId], let cache = state.cache,
           cache.hasNothingDue(at: moment, feedIsFresh: fresh, matchIsLive: state.tracker.latest?.status.isInProgress == true) {
            if let due = cache.earliestDue { next = min(next ?? due, due) }
            return next
        }
        guard let activities = matches[matchId]?.cache?.sorted() else { return next }
        let latest = latest(matchId: matchId)
        var matchNext: Date?
        var deliveries: [Delivery] = []
        var changed = ChangeSet()
        for var record in activities {
            if record.phase == .waiting {
                guard let latest, latest.status.isInProgress else { continue }
                if let gate = startGate[record.deviceId], gate > moment {
                    matchNext = min(matchNext ?? gate, gate)
                    continue
                }
                guard try await mayAct(on: record) else { continue }
                try await execute(record.lifecycle.matchChanged(latest, now: moment, policy: policy),
                                  on: &record, into: &deliveries, changed: &changed)
                continue
            }
            if let due = record.lifecycle.nextDeadline(policy: policy, feedIsFresh: fresh), due <= moment {
                // `record` comes back as the cache now has it (its lifecycle moved on; ended if it restarted).
                try await execute(record.lifecycle.tick(now: moment, policy: policy, feedIsFresh: fresh),
                                  on: &record, into: &deliveries, changed: &changed)
            }
            if let due = record.lifecycle.nextDeadline(policy: policy, feedIsFresh: fresh), due > moment {
                matchNext = min(matchNext ?? due, due)
            }
        }
        try await finish(deliveries, changed)
        matches[matchId]?.cache?.settle(due: matchNext, feedIsFresh: fresh)
        if let matchNext { next = min(next ?? matchNext, matchNext) }
        if isFinal(matchId: matchId), matches[matchId]?.cache?.isEmpty ?? true {
            // Nothing left to do for it: forget it (the store keeps its last snapshot).
            matches[matchId] = nil
            pollFacts.forget(matchId)
        }
        return next
    }

    /// Channel mode: the match's coalesced broadcast and the stale-date refresh of its channel, put in the outbox.
    /// When the channel next has something to do. A tick that broadcast nothing commits nothing (a channel changed
    /// without a broadcast is saved by `BroadcastChannels.run`).
    func tickChannel(matchId: String, fresh: Bool) async throws(ServiceError) -> Date? {
        guard let broadcast else { return nil }
        let (broadcasts, due) = await broadcast.tick(matchId: matchId, fresh: fresh)
        guard !broadcasts.isEmpty else { return due }
        do {
            try await finish(broadcasts, ChangeSet())
        } catch {
            await broadcast.rollBack(matchId: matchId)  // not in the outbox: the channel broadcasts it again at its next look
            throw error
        }
        await broadcast.commit(matchId: matchId)
        return due
    }

    // MARK: Restart

    /// After a restart: reload open activities and the last snapshot of each match, then bring every
    /// activity up to date: a state newer than the one it was last sent goes out, a held `end` goes
    /// out, nothing is started twice (a `starting` activity is not started again).
    public func restore() async throws(ServiceError) {
        await gates.enterAll()
        defer { gates.leaveAll() }
        let open = try await persist { try await self.store.openActivities() }
        let restored = open.count
        var byMatch: [String: ActivityCache] = [:]
        for record in open { byMatch[record.matchId, default: ActivityCache(policy: policy)].put(record) }
        _ = consume open
        // Moved into `matches`, not copied: a copy still alive while the fan-outs below change the activities would
        // make the first change copy every activity of its match (and the list read back would stay beside them).
        while let (matchId, cache) = byMatch.popFirst() { state(of: matchId).cache = cache }
        let records = try await persist { try await self.store.matches() }
        for record in records { resume(from: record) }
        // Channels are loaded before the fan-outs below, which attach each match's open one to its update.
        try await broadcast?.restore()
        for matchId in matches.keys.sorted() {
            guard let latest = latest(matchId: matchId) else { continue }
            try await fanOut(latest, to: matchId)
        }
        logger.info("restored", metadata: ["activities": "\(restored)", "matches": "\(records.count)"])
    }

    /// The match's state, made (and kept) when it has none yet.
    func state(of matchId: String) -> MatchState {
        if let known = matches[matchId] { return known }
        let made = MatchState()
        matches[matchId] = made
        return made
    }

    /// The match's tracker picks up from its last stored snapshot.
    func resume(from record: MatchRecord) {
        let state = state(of: record.matchId)
        // The sticky event text is the one the devices last got, not a fresh "has started".
        let newest = state.cache?.records.max { $0.lifecycle.lastTimestamp < $1.lifecycle.lastTimestamp }
        let event = newest?.lifecycle.sentContent?.event
        state.tracker.resume(from: record.snapshot, event: event, ledger: record.ledger)
        state.lastSeq = record.snapshot.seq
        pollFacts.record(record.matchId, status: record.snapshot.status)
    }

    // MARK: Replicas

    /// This replica just gained the match (free, or taken over from a replica whose lease expired): what it knew
    /// of the match is dropped and read again from the store; what the last owner left in the outbox goes out
    /// again (same ids); then every activity is brought up to date as after a restart (nothing started twice).
    public func take(matchId: String) async throws(ServiceError) {
        await gates.enter(matchId)
        defer { gates.leave(matchId) }
        matches[matchId] = nil
        pollFacts.forget(matchId)
        if let replicas = ownership.shared?.store {
            let left = try await persist { try await replicas.queuedDeliveries(matchId: matchId) }
            if !left.isEmpty {
                logger.info("outbox of a taken match", metadata: ["match": "\(matchId)", "deliveries": "\(left.count)"])
                await relay.submit(left)
            }
        }
        try await reload(matchId: matchId)
    }

    /// As after a restart, for one match: its open activities, its last snapshot and its broadcast channel are read
    /// again from the store, then every activity (and the channel) is brought up to date from there: what the store
    /// says was not sent goes out, nothing is started twice.
    func reload(matchId: String) async throws(ServiceError) {
        matches[matchId]?.cache = nil
        try await loadActivities(matchId: matchId)
        if let record = try await persist({ try await self.store.match(id: matchId) }) { resume(from: record) }
        try await broadcast?.restore(matchId: matchId)
        if let latest = latest(matchId: matchId) { try await fanOut(latest, to: matchId) }
    }

    /// This replica no longer runs the match: forget it (the store and the new owner have everything).
    public func release(matchId: String) async {
        await gates.enter(matchId)
        defer { gates.leave(matchId) }
        await forget(matchId: matchId)
    }

    /// Drops what this process knew of the match (its cache, its broadcast channel).
    func forget(matchId: String) async {
        matches[matchId] = nil
        pollFacts.forget(matchId)
        await broadcast?.forget(matchId: matchId)
    }

    /// Whether the match needs this replica any more: false until it is over, none of its activities is open and
    /// its broadcast channel, if it had one, is deleted (only the match's owner deletes it).
    public func isDone(matchId: String) async -> Bool {
        if let broadcast, await broadcast.hasChannel(matchId: matchId) { return false }
        guard let state = matches[matchId] else { return true }
        return (state.tracker.current?.snapshot.status.isFinal ?? false) && (state.cache?.isEmpty ?? true)
    }

    /// Whether a followed match needs a source of its own (not final, not postponed): answered from memory.
    public nonisolated func wantsSource(matchId: String) -> Bool {
        !pollFacts.needsNoSource(matchId)
    }

    /// Match ids with open activities whose match is not known to be final: what needs polling.
    public func matchesToPoll() async throws(ServiceError) -> [String] {
        let followed = try await persist { try await self.store.followedMatchIds() }
        return pollFacts.wantingSources(followed)
    }

    /// Whether the match has a follower: one index probe of the store.
    public nonisolated func isFollowed(matchId: String) async throws(ServiceError) -> Bool {
        try await persist { try await self.store.isFollowed(matchId: matchId) }
    }

    /// Counts by phase of the cached open activities, for metrics.
    public func census() -> [ActivityLifecycle.Phase: Int] {
        var counts: [ActivityLifecycle.Phase: Int] = [:]
        for state in matches.values {
            guard let cache = state.cache else { continue }
            for record in cache.records { counts[record.phase, default: 0] += 1 }
        }
        return counts
    }

    // MARK: Internals

    /// Loads the match's open activities into its cache, unless they are there already.
    func loadActivities(matchId: String) async throws(ServiceError) {
        if matches[matchId]?.cache != nil { return }
        let loaded = try await persist { try await self.store.activities(matchId: matchId) }
        state(of: matchId).cache = ActivityCache(loaded, policy: policy)
    }

    /// A waiting activity may only start when the device has a push-to-start token and the
    /// spacing since its last start has passed; every other phase may always act.
    ///
    /// The spacing is the device's, across matches, whose operations run side by side: it is looked at again after
    /// the token's read (another match may have started one of the device's activities meanwhile), and `execute`
    /// sets it before it awaits anything, so no other start for the device slips in between.
    func mayAct(on record: ActivityRecord) async throws(ServiceError) -> Bool {
        guard record.phase == .waiting else { return true }
        let deviceId = record.deviceId
        if let gate = startGate[deviceId], gate > now() { return false }
        guard try await persist({ try await self.store.pushToStartToken(deviceId: deviceId) }) != nil else { return false }
        if let gate = startGate[deviceId], gate > now() { return false }
        return true
    }

    /// What `actions` say for `record`, each change and delivery at the time it happens. (A fan-out changes its
    /// activities in place instead, all at the fan-out's time: `advance`, `start`.)
    func execute(
        _ actions: [ActivityAction], on record: inout ActivityRecord,
        into deliveries: inout [Delivery], changed: inout ChangeSet
    ) async throws(ServiceError) {
        // A lifecycle may change without acting (content held, an end held for the token): that
        // change must be kept as surely as a sent push.
        if actions.isEmpty, matches[record.matchId]?.cache?[record.activityId]?.lifecycle == record.lifecycle {
            return
        }
        var restart = false
        for action in actions {
            switch action {
            case .send(let intent):
                var pushToStart: String?
                if case .pushToStart = intent.recipient {
                    let deviceId = record.deviceId
                    // Set before the read: an operation on another match runs meanwhile (`mayAct`).
                    startGate[deviceId] = now().addingTimeInterval(settings.pushToStartSpacing.seconds)
                    pushToStart = try await persist { try await self.store.pushToStartToken(deviceId: deviceId) }?.token
                    // The spacing is APNs's (iOS throttles push-to-start); FCM and Web Push have none.
                    if let pushToStart, DirectAddress.isDirect(pushToStart) { startGate[deviceId] = nil }
                }
                build(intent, for: record, pushToStartToken: pushToStart, now: now(), into: &deliveries)
                if let pushToStart { Self.started(&record, through: pushToStart) }
            case .finished:
                break
            case .restart:
                restart = true
            }
        }
        try await save(record, changed: &changed)
        if restart {
            // Apple's 8-hour limit: the ended activity is replaced by a fresh one for the same follow.
            let lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: record.matchId)
            var fresh = ActivityRecord(deviceId: record.deviceId, environment: record.environment, lifecycle: lifecycle, updatedAt: now())
            try await save(fresh, changed: &changed)
            if let latest = latest(matchId: record.matchId), try await mayAct(on: fresh) {
                try await execute(fresh.lifecycle.matchChanged(latest, now: now(), policy: policy),
                                  on: &fresh, into: &deliveries, changed: &changed)
            }
        }
    }

    /// A start just went to `token`, the device's push-to-start token: when that is a `DirectAddress` (FCM, Web Push),
    /// the activity is active on it at once (`ActivityLifecycle.startedDirect`); an APNs one waits for its update token.
    static func started(_ record: inout ActivityRecord, through token: String) {
        guard let address = DirectAddress(stored: token) else { return }
        record.lifecycle.startedDirect(token: address.activityToken(for: record.activityId))
    }

    /// The delivery of one intent of `record`, appended to `deliveries` (nothing when there is no token to send to).
    func build(
        _ intent: PushIntent, for record: borrowing ActivityRecord, pushToStartToken: String?, now moment: Date,
        into deliveries: inout [Delivery]
    ) {
        // A device of an app taken out of the configuration: nothing is made for it, rather than a push with another
        // app's credentials (its calls to the API are refused too; docs/apps.md).
        guard let topic = apps.topic(ofDevice: record.deviceId) else {
            metrics.deliveries(sink: "builder", outcome: "no_app", count: 1)
            return
        }
        do {
            if let delivery = try builder.build(
                intent, matchId: record.matchId, activityId: record.activityId,
                pushToStartToken: pushToStartToken, topic: topic, now: moment) {
                deliveries.append(delivery)
            }
        } catch {
            metrics.deliveries(sink: "builder", outcome: "too_large", count: 1)
            logger.error("payload too large", metadata: ["activity": "\(record.activityId)", "error": "\(error)"])
        }
    }

    func save(_ record: ActivityRecord, changed: inout ChangeSet) async throws(ServiceError) {
        var record = record
        record.updatedAt = now()
        // Callers load the match's open activities first, so the cache is complete here. Mutated in
        // place, never read out first: a copy of the cache alive here would make `put` copy its activities.
        matches[record.matchId]?.cache?.put(record)
        changed.append(record)
    }

    func end(_ record: ActivityRecord, reason: ActivityEndReason) async throws(ServiceError) {
        var deliveries: [Delivery] = []
        var changed = ChangeSet()
        try await end(record, reason: reason, into: &deliveries, changed: &changed)
        try await finish(deliveries, changed)
    }

    /// The activity ends: its end (if it sends one) and its record, saved even when the end is silent, go into
    /// those given.
    func end(
        _ record: ActivityRecord, reason: ActivityEndReason, into deliveries: inout [Delivery], changed: inout ChangeSet
    ) async throws(ServiceError) {
        var record = record
        let before = changed.count
        try await execute(record.lifecycle.end(reason, now: now()), on: &record, into: &deliveries, changed: &changed)
        if changed.count == before { try await save(record, changed: &changed) }
    }

    /// Saves the changed activities with their deliveries in one transaction, then hands the deliveries to the
    /// relay. A crash before the save loses the operation whole (the next poll or restore redoes it); after it,
    /// the outbox still has the deliveries and the relay sends them after the restart with the same ids.
    func finish(_ deliveries: [Delivery], _ changed: ChangeSet) async throws(ServiceError) {
        try await save(changed.all, deliveries)
        await relay.submit(deliveries)
    }

    /// Saves activities with their deliveries (in the outbox), in one transaction fenced by the matches' leases.
    /// Needs nothing of the actor's state: a fan-out runs it off the actor, chunk by chunk (`CommitPipeline`).
    /// `fence`, when given, is the one to write under (a fan-out takes it once); otherwise the records' matches' own.
    /// `share` describes a fan-out chunk to the store (`FanOutShare`). `match`, when given, is the match's new state,
    /// saved in the same transaction (a change's first chunk: `fanOut(_:to:carrying:)`).
    nonisolated func save(
        _ records: [ActivityRecord], _ deliveries: [Delivery], fence given: LeaseFence? = nil, share: FanOutShare? = nil,
        match: MatchRecord? = nil
    ) async throws(ServiceError) {
        guard !records.isEmpty || !deliveries.isEmpty || match != nil else { return }
        if let replicas = ownership.shared?.store, let fence = given ?? ownership.fence(for: Self.matchIds(records, deliveries)) {
            let saved = try await persist { () async throws -> Bool in
                do {
                    try await replicas.saveActivities(records, enqueue: deliveries, fence: fence, share: share, match: match)
                    return true
                } catch let error as StoreError where error == .leaseLost {
                    return false
                }
            }
            guard saved else {
                // Another replica runs the match now: nothing was written or sent; let it go here.
                for matchId in fence.generations.keys {
                    ownership.lost(matchId)
                    await forget(matchId: matchId)
                }
                logger.warning("match moved to another replica", metadata: ["matches": "\(fence.generations.keys.sorted())"])
                throw ServiceError(.unavailable, "the match moved to another replica; retry")
            }
        } else {
            try await persist { try await self.store.saveActivities(records, enqueue: deliveries, share: share, match: match) }
        }
    }

    /// The distinct match ids of an operation's records and deliveries: one or a few, in long runs, so a
    /// repeat of the previous id is skipped before it is hashed. Each element is read in place, not copied out.
    static func matchIds(_ records: [ActivityRecord], _ deliveries: [Delivery]) -> Set<String> {
        var ids: Set<String> = []
        var previous: String?
        func note(_ id: String) {
            guard id != previous else { return }
            ids.insert(id)
            previous = id
        }
        for index in records.indices { note(records[index].matchId) }
        for index in deliveries.indices { note(deliveries[index].matchId) }
        return ids
    }

    nonisolated func persist<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws(ServiceError) -> T {
        let access = StoreAccess(store: store, logger: logger)
        return try await access { _ in try await operation() }
    }
}
