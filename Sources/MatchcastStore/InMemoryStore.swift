import Foundation
import MatchcastCore

/// A store that lives and dies with the process: for tests, `replay`, and `--store memory`.
///
/// It keeps the values exactly as given (no JSON round trip), and follows the same rules as
/// `SQLiteStore`, checked by one shared contract suite. Lookups by id, match, device and token go through
/// indexes (activities: `InMemoryStore+Activities.swift`), so such a call costs what its arguments and its
/// answer cost, not what the store holds: `matchcast bench fanout` runs it with 100,000 activities.
public actor InMemoryStore: MatchcastStore {
    /// Devices with their push-to-start tokens and follows (`DeviceTable`).
    var devices = DeviceTable()
    /// Match id → the slots of the devices following it; a match nobody follows has no entry. Its keys are the match
    /// id strings the follows keep (one per match).
    private var followersByMatch: [String: Set<Int>] = [:]
    private var followCount = 0
    /// Push-to-start tokens and Android and web addresses, by kind.
    private var tokenCounts: [StoreCensus.AddressKind: Int] = [:]
    /// Activities and their indexes (`InMemoryStore+Activities.swift`).
    var activityTable = ActivityTable()
    private var matchesById: [String: MatchRecord] = [:]
    private var outbox = OutboxQueue()
    private var letters = DeadLetterList()
    private var refusals: [String: [TokenRefusal]] = [:]
    /// Broadcast channels by match id (`InMemoryStore+Channels.swift`).
    var channelsByMatch: [String: MatchChannelRecord] = [:]

    /// False: saved deliveries are not queued (`MatchcastStore.keepsOutbox`), for a process that never reads them back.
    public nonisolated let keepsOutbox: Bool
    /// False: a fan-out does not save the activities it only moved to new content (`MatchcastStore.keepsActivityContent`),
    /// for a process that loads each match's activities into the lifecycle's cache once and never reloads them.
    public nonisolated let keepsActivityContent: Bool

    public init(keepsOutbox: Bool = true, keepsActivityContent: Bool = true) {
        self.keepsOutbox = keepsOutbox
        self.keepsActivityContent = keepsActivityContent
    }

    // MARK: Devices

    public func createDevice(_ device: DeviceRecord) throws(StoreError) {
        guard !devices.contains(id: device.id) else { throw .conflict("device '\(device.id)' exists") }
        devices.add(device)
    }

    public func device(id: String) -> DeviceRecord? { devices.slot(id: id).flatMap { devices[$0]?.record } }

    @discardableResult
    public func deleteDevice(id: String) -> Bool {
        guard let slot = devices.slot(id: id), let entry = devices.remove(id: id) else { return false }
        if let token = entry.token?.token {
            tokenCounts[StoreCensus.AddressKind(token), default: 0] -= 1
        }
        for follow in entry.follows { removeFollower(slot, of: follow.matchId) }
        activityTable.remove(deviceId: id)
        refusals[id] = nil
        return true
    }

    // MARK: Push-to-start tokens

    public func setPushToStartToken(_ record: PushToStartTokenRecord) throws(StoreError) {
        let slot = try requireDevice(record.deviceId)
        if let owner = devices.slot(token: record.token), owner != slot {
            devices.setToken(nil, at: owner)
            tokenCounts[StoreCensus.AddressKind(record.token), default: 0] -= 1
        }
        let token = DeviceTable.Token(token: record.token, environment: record.environment, updatedAt: record.updatedAt)
        if let previous = devices.setToken(token, at: slot) {
            tokenCounts[StoreCensus.AddressKind(previous), default: 0] -= 1
        }
        tokenCounts[StoreCensus.AddressKind(record.token), default: 0] += 1
    }

    public func pushToStartToken(deviceId: String) -> PushToStartTokenRecord? {
        devices.slot(id: deviceId).flatMap { devices[$0]?.tokenRecord }
    }

    public func pushToStartTokens(deviceIds: [String]) -> [String: PushToStartTokenRecord] {
        var found: [String: PushToStartTokenRecord] = [:]
        for deviceId in deviceIds { found[deviceId] = pushToStartToken(deviceId: deviceId) }
        return found
    }

    public func pushToStartTokenHolder(token: String) -> String? {
        devices.slot(token: token).flatMap { devices[$0]?.id }
    }

    public func removePushToStartToken(token: String) -> String? {
        guard let slot = devices.slot(token: token) else { return nil }
        tokenCounts[StoreCensus.AddressKind(token), default: 0] -= 1
        devices.setToken(nil, at: slot)
        return devices[slot]?.id
    }

    // MARK: Follows

    public func addFollow(_ follow: FollowRecord) throws(StoreError) -> Bool {
        let slot = try requireDevice(follow.deviceId)
        guard devices[slot]?.follow(matchId: follow.matchId) == nil else { return false }
        // The match id string the match's other follows keep, if it has any: one per match, not one per follow.
        var matchId = follow.matchId
        if let known = followersByMatch.index(forKey: matchId) { matchId = followersByMatch.keys[known] }
        devices.update(at: slot) { $0.addFollow(.init(matchId: matchId, createdAt: follow.createdAt)) }
        followersByMatch[matchId, default: []].insert(slot)
        followCount += 1
        return true
    }

    public func removeFollow(deviceId: String, matchId: String) -> Bool {
        guard let slot = devices.slot(id: deviceId), devices.update(at: slot, { $0.removeFollow(matchId: matchId) }) else {
            return false
        }
        removeFollower(slot, of: matchId)
        return true
    }

    public func follows(deviceId: String) -> [FollowRecord] {
        guard let slot = devices.slot(id: deviceId) else { return [] }
        return (devices[slot]?.follows ?? []).sorted { $0.matchId < $1.matchId }
    }

    public func followers(matchId: String) -> [FollowRecord] {
        (followersByMatch[matchId] ?? []).compactMap { devices[$0]?.follow(matchId: matchId) }.sorted { $0.deviceId < $1.deviceId }
    }

    public func followedMatchIds() -> [String] {
        followersByMatch.keys.sorted()
    }

    public func isFollowed(matchId: String) -> Bool {
        !(followersByMatch[matchId]?.isEmpty ?? true)
    }

    /// The index side of a removed follow.
    private func removeFollower(_ slot: Int, of matchId: String) {
        followCount -= 1
        guard let position = followersByMatch.index(forKey: matchId) else { return }
        followersByMatch.values[position].remove(slot)
        if followersByMatch.values[position].isEmpty { followersByMatch.remove(at: position) }
    }

    // MARK: Outbox and dead letters

    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) throws(StoreError) {
        try saveActivities(records)  // validates everything before changing anything
        if keepsOutbox { outbox.enqueue(deliveries) }
    }

    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) throws(StoreError) {
        try match?.validate()
        try saveActivities(records, enqueue: deliveries)
        if let match { matchesById[match.matchId] = match }
    }

    public func queuedDeliveries(limit: Int) -> [Delivery] { outbox.queued(limit: limit) }

    public func removeQueuedDeliveries(ids: [String]) { outbox.remove(ids: ids) }

    public func queuedDeliveryCount() -> Int { outbox.count }

    public func recordDeadLetters(_ new: [DeadLetter]) { letters.record(new) }

    public func deadLetters(limit: Int) -> [DeadLetter] { letters.newest(limit: limit) }

    public func recordTokenRefusal(_ refusal: TokenRefusal) {
        guard devices.slot(id: refusal.deviceId) != nil else { return }
        var kept = refusals[refusal.deviceId, default: []]
        kept.insert(refusal, at: kept.firstIndex { $0.at <= refusal.at } ?? kept.endIndex)  // the newest first among equal times
        refusals[refusal.deviceId] = Array(kept.prefix(TokenRefusal.keptPerDevice))
    }

    public func tokenRefusals(deviceId: String) -> [TokenRefusal] { refusals[deviceId] ?? [] }

    public func noteUpdateTokens(_ new: [UpdateTokenSighting], now: Date) {
        let cutoff = UpdateTokenSighting.cutoff(at: now)
        for sighting in new {
            guard let slot = devices.slot(id: sighting.deviceId) else { continue }
            devices.update(at: slot) { entry in
                guard !entry.sightings.contains(where: { $0.token == sighting.token }) else { return }
                entry.sightings.removeAll { $0.firstSeenAt < cutoff }
                entry.sightings.append(DeviceTable.Sighting(token: sighting.token, firstSeenAt: sighting.firstSeenAt))
            }
        }
    }

    public func updateTokenSightings(deviceId: String) -> [UpdateTokenSighting] {
        guard let slot = devices.slot(id: deviceId), let entry = devices[slot] else { return [] }
        return entry.sightings.map { UpdateTokenSighting(deviceId: deviceId, token: $0.token, firstSeenAt: $0.firstSeenAt) }
            .sorted { ($0.firstSeenAt, $0.token) < ($1.firstSeenAt, $1.token) }
    }

    // MARK: Matches

    public func saveMatch(_ record: MatchRecord) throws(StoreError) {
        try record.validate()
        matchesById[record.matchId] = record
    }

    public func match(id: String) -> MatchRecord? { matchesById[id] }

    public func matches() -> [MatchRecord] {
        matchesById.values.sorted { $0.matchId < $1.matchId }
    }

    @discardableResult
    public func deleteMatch(id: String) -> Bool {
        matchesById.removeValue(forKey: id) != nil
    }

    // MARK: Health

    public func ping() {}

    public func census() -> StoreCensus {
        StoreCensus(
            devices: devices.count, follows: followCount,
            pushToStartTokens: tokenCounts[.pushToStart, default: 0],
            updateTokens: activityTable.openTokenCount - activityTable.openDirectTokenCount, fcmTokens: tokenCounts[.fcm, default: 0],
            webPushSubscriptions: tokenCounts[.webPush, default: 0])
    }

    /// The device's slot.
    private func requireDevice(_ id: String) throws(StoreError) -> Int {
        guard let slot = devices.slot(id: id) else { throw .notFound("no device '\(id)'") }
        return slot
    }
}
