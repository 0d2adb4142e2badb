import Foundation
import MatchcastCore

/// Everything the broker must find again after a restart: devices, push-to-start tokens, follows,
/// activities (with their lifecycle) and the latest state of each match.
///
/// Every call either succeeds completely or changes nothing, and throws only `StoreError`.
/// Lists come back sorted, so callers and tests see the same order from every implementation.
/// Dates keep millisecond precision; a lifecycle's own dates keep whole seconds (its JSON form).
public protocol MatchcastStore: Sendable {
    // MARK: Devices

    /// Registers a device; `.conflict` when the id is taken.
    func createDevice(_ device: DeviceRecord) async throws(StoreError)
    func device(id: String) async throws(StoreError) -> DeviceRecord?
    /// Deletes the device with its push-to-start token, follows and activities; false when there was none.
    @discardableResult
    func deleteDevice(id: String) async throws(StoreError) -> Bool

    // MARK: Push-to-start tokens

    /// Replaces the device's token. The token moves: a device that held it before loses it.
    /// `.notFound` when the device does not exist.
    func setPushToStartToken(_ record: PushToStartTokenRecord) async throws(StoreError)
    func pushToStartToken(deviceId: String) async throws(StoreError) -> PushToStartTokenRecord?
    /// The push-to-start tokens of those of `deviceIds` that have one, in one read (a kick-off starts thousands).
    func pushToStartTokens(deviceIds: [String]) async throws(StoreError) -> [String: PushToStartTokenRecord]
    /// Forgets a dead token; returns the id of the device that held it, if any.
    func removePushToStartToken(token: String) async throws(StoreError) -> String?
    /// The device whose push-to-start token (or Android or web address) is `token`, if any.
    func pushToStartTokenHolder(token: String) async throws(StoreError) -> String?

    // MARK: Follows

    /// Idempotent; true when the follow is new (an existing one keeps its `createdAt`).
    /// `.notFound` when the device does not exist.
    func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool
    /// True when there was such a follow.
    func removeFollow(deviceId: String, matchId: String) async throws(StoreError) -> Bool
    /// Adds the follows (each as `addFollow`) with the new activities they bring (each as `saveActivity`): what the
    /// API's follows queued together write, in one transaction where the store has them (then on error none is
    /// saved). Each follow's `createdAt` as stored (a repeat keeps its first), in order.
    func addFollows(_ follows: [NewFollow]) async throws(StoreError) -> [Date]
    /// The device's follows, sorted by match id.
    func follows(deviceId: String) async throws(StoreError) -> [FollowRecord]
    /// The match's followers, sorted by device id.
    func followers(matchId: String) async throws(StoreError) -> [FollowRecord]
    /// Every match with at least one follower, distinct and sorted: the sources to resume.
    func followedMatchIds() async throws(StoreError) -> [String]
    /// Whether the match has at least one follower: one index probe, however many follow it.
    func isFollowed(matchId: String) async throws(StoreError) -> Bool

    // MARK: Activities

    /// Inserts or replaces the activity. An update token belongs to one open activity at a time:
    /// `.conflict` when this activity is open and another open one holds its token.
    /// `.notFound` when the device does not exist; `.invalid` when the ids contradict the lifecycle.
    func saveActivity(_ record: ActivityRecord) async throws(StoreError)
    /// Saves all the records in one transaction, with `saveActivity`'s rules; on error none is saved.
    func saveActivities(_ records: [ActivityRecord]) async throws(StoreError)
    func activity(id: String) async throws(StoreError) -> ActivityRecord?
    /// Sorted by activity id.
    func activities(matchId: String) async throws(StoreError) -> [ActivityRecord]
    /// Sorted by activity id.
    func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord]
    /// The open activity holding the token; failing that, the most recently updated ended one.
    func activity(updateToken: String) async throws(StoreError) -> ActivityRecord?
    /// For each of `updateTokens` that an open activity holds, that activity's id, in one read (update tokens
    /// registered together are checked together).
    func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String]
    /// False when there was no such activity.
    @discardableResult
    func deleteActivity(id: String) async throws(StoreError) -> Bool
    /// Every activity not yet ended, sorted by activity id: what a restart resumes.
    func openActivities() async throws(StoreError) -> [ActivityRecord]

    // MARK: Matches

    /// Inserts or replaces the match's latest state. `.invalid` when the id is not the snapshot's.
    func saveMatch(_ record: MatchRecord) async throws(StoreError)
    func match(id: String) async throws(StoreError) -> MatchRecord?
    /// Sorted by match id.
    func matches() async throws(StoreError) -> [MatchRecord]
    /// Forgets a match that is over and followed by no one; false when there was none.
    @discardableResult
    func deleteMatch(id: String) async throws(StoreError) -> Bool

    // MARK: Outbox and dead letters

    /// Saves the records (with `saveActivities`' rules) and queues the deliveries, in one transaction: what an
    /// activity was last sent and what is still to send survive a crash together. A queued delivery is keyed by
    /// (activity id, event): a newer `update` replaces a queued older one of the same activity (latest wins);
    /// a `start` and an `end` stay queued until removed.
    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError)
    /// `saveActivities(_:enqueue:)` for one chunk of a fan-out, described by `share` (nil: not a fan-out chunk).
    /// A store may use the description to write less; what reads back afterwards is the same.
    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?) async throws(StoreError)
    /// `saveActivities(_:enqueue:share:)` with the match's new state (as `saveMatch`) in the same transaction where the
    /// store has one: a changed poll's match row commits with its fan-out's first chunk, one write rather than two.
    /// The match is checked first (`.invalid`, nothing saved); nil saves no match.
    func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) async throws(StoreError)
    /// Whether this store uses a fan-out chunk's `FanOutShare`: when not, a fan-out does not work one out.
    var keepsFanOutState: Bool { get }
    /// Whether a fan-out's chunks that queue behind a save are best saved together, in one call: true when each save
    /// costs a round trip and a commit that waits for the disk (PostgreSQL), false when the store joins concurrent
    /// writes into one commit itself (SQLite's write queue) or has nothing to commit (`CommitPipeline`).
    var savesChunksTogether: Bool { get }
    /// Whether saved deliveries are queued in an outbox to be read back (after a restart) and forgotten once sent:
    /// false only for a store nothing is ever read back from, such as `replay`'s in-memory one
    /// (`InMemoryStore(keepsOutbox: false)`): its saves drop the deliveries, and the relay asks it to forget none.
    var keepsOutbox: Bool { get }
    /// Whether what an activity shows and holds back (its lifecycle's content and when it was sent) is kept to be read
    /// back: false only for a store whose activities are loaded into the lifecycle manager's cache once and never
    /// again, such as `replay`'s in-memory one (`InMemoryStore(keepsActivityContent: false)`; a replay ends on a failed
    /// save, the one thing that would load them again). A fan-out then saves only the activities whose standing
    /// (`ActivityLifecycle.Standing`: phase, tokens, channel, end) changed, not those it only moved to the new content;
    /// every other read (by id, by update token, the census) reads only standing and identity.
    var keepsActivityContent: Bool { get }
    /// Queued deliveries, oldest first (the order they were queued; a replaced update counts as queued anew),
    /// at most `limit`, payload bytes exactly as queued.
    func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery]
    /// Forgets queued deliveries by id: handed to every sink, or claimed before a send that must not repeat.
    /// Ids no longer queued (replaced, already removed) are ignored.
    func removeQueuedDeliveries(ids: [String]) async throws(StoreError)
    /// How many deliveries are queued.
    func queuedDeliveryCount() async throws(StoreError) -> Int
    /// Keeps refused deliveries. The same delivery refused again by the same sink replaces the older letter.
    func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError)
    /// The newest dead letters first (then by delivery id), at most `limit`.
    func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter]
    /// Keeps a refusal of one of a device's tokens (the device's last `TokenRefusal.keptPerDevice`); nothing when
    /// the device is gone.
    func recordTokenRefusal(_ refusal: TokenRefusal) async throws(StoreError)
    /// The device's kept refusals, newest first.
    func tokenRefusals(deviceId: String) async throws(StoreError) -> [TokenRefusal]
    /// Update tokens as the apps reported them (`UpdateTokenSighting`): a token already seen keeps its first sighting; a
    /// sighting of a device that is gone is dropped; sightings older than `UpdateTokenSighting.keptFor` before `now`
    /// may be let go (the noted devices' at least).
    func noteUpdateTokens(_ sightings: [UpdateTokenSighting], now: Date) async throws(StoreError)
    /// The device's update tokens' first sightings.
    func updateTokenSightings(deviceId: String) async throws(StoreError) -> [UpdateTokenSighting]

    // MARK: Health

    /// A cheap round trip for readiness checks.
    func ping() async throws(StoreError)
    /// How many follows and tokens there are, for metrics.
    func census() async throws(StoreError) -> StoreCensus
}

extension MatchcastStore {
    /// Reads the followers: for stores with nothing better.
    public func isFollowed(matchId: String) async throws(StoreError) -> Bool {
        try await !followers(matchId: matchId).isEmpty
    }

    /// Every activity keeps its state in its own row.
    public var keepsFanOutState: Bool { false }

    /// Each chunk saved on its own.
    public var savesChunksTogether: Bool { false }

    /// Deliveries are queued until sent.
    public var keepsOutbox: Bool { true }

    /// Every activity's content is saved, to be read back after a restart or a reload.
    public var keepsActivityContent: Bool { true }

    /// Every record written whole: for stores that keep each activity's sent state in its own row.
    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries)
    }

    /// The match saved first, then the rest: for stores with nothing better (a failure after the match's save leaves
    /// it saved, which a caller that saves the same match again later does not mind).
    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) async throws(StoreError) {
        if let match { try await saveMatch(match) }
        try await saveActivities(records, enqueue: deliveries, share: share)
    }

    /// One read per device: for stores with nothing better.
    public func pushToStartTokens(deviceIds: [String]) async throws(StoreError) -> [String: PushToStartTokenRecord] {
        var tokens: [String: PushToStartTokenRecord] = [:]
        for deviceId in deviceIds {
            if let token = try await pushToStartToken(deviceId: deviceId) { tokens[deviceId] = token }
        }
        return tokens
    }

    /// One read per token: for stores with nothing better.
    public func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        var holders: [String: String] = [:]
        for token in updateTokens {
            if let holder = try await activity(updateToken: token), holder.isOpen { holders[token] = holder.activityId }
        }
        return holders
    }
}
