import MatchcastCore

/// A store that lives and dies with the process: for tests, `replay`, and `--store memory`.
///
/// It keeps the values exactly as given (no JSON round trip), and follows the same rules as
/// `SQLiteStore`, checked by one shared contract suite. Lookups by id, match, device and token go through
/// indexes (activities: `InMemoryStore+Activities.swift`), so such a call costs what its arguments and its
/// answer cost, not what the store holds: `matchcast bench fanout` runs it with 100,000 activities.
public actor InMemoryStore: MatchcastStore {
    var devices: [String: DeviceRecord] = [:]
    /// By device id.
    private var tokens: [String: PushToStartTokenRecord] = [:]
    /// Push-to-start token → the device holding it (at most one), so setting a token is not a scan.
    private var tokenOwners: [String: String] = [:]
    /// By device id, then match id.
    private var followsByDevice: [String: [String: FollowRecord]] = [:]
    /// Match id → the devices following it; a match nobody follows has no entry.
    private var followersByMatch: [String: Set<String>] = [:]
    private var followCount = 0
    /// Activities and their indexes (`InMemoryStore+Activities.swift`).
    var activityTable = ActivityTable()
    private var matchesById: [String: MatchRecord] = [:]
    private var outbox = OutboxQueue()
    private var letters = DeadLetterList()
    /// Broadcast channels by match id (`InMemoryStore+Channels.swift`).
    var channelsByMatch: [String: MatchChannelRecord] = [:]

    public init() {}

    // MARK: Devices

    public func createDevice(_ device: DeviceRecord) throws(StoreError) {
        guard devices[device.id] == nil else { throw .conflict("device '\(device.id)' exists") }
        devices[device.id] = device
    }

    public func device(id: String) -> DeviceRecord? { devices[id] }

    @discardableResult
    public func deleteDevice(id: String) -> Bool {
        guard devices.removeValue(forKey: id) != nil else { return false }
        if let token = tokens.removeValue(forKey: id)?.token { tokenOwners[token] = nil }
        for matchId in followsByDevice.removeValue(forKey: id)?.keys ?? [:].keys { removeFollower(id, of: matchId) }
        activityTable.remove(deviceId: id)
        return true
    }

    // MARK: Push-to-start tokens

    public func setPushToStartToken(_ record: PushToStartTokenRecord) throws(StoreError) {
        try requireDevice(record.deviceId)
        if let owner = tokenOwners[record.token], owner != record.deviceId { tokens[owner] = nil }
        if let previous = tokens[record.deviceId]?.token { tokenOwners[previous] = nil }
        tokens[record.deviceId] = record
        tokenOwners[record.token] = record.deviceId
    }

    public func pushToStartToken(deviceId: String) -> PushToStartTokenRecord? { tokens[deviceId] }

    public func pushToStartTokens(deviceIds: [String]) -> [String: PushToStartTokenRecord] {
        var found: [String: PushToStartTokenRecord] = [:]
        for deviceId in deviceIds { found[deviceId] = tokens[deviceId] }
        return found
    }

    public func removePushToStartToken(token: String) -> String? {
        guard let deviceId = tokenOwners.removeValue(forKey: token) else { return nil }
        tokens[deviceId] = nil
        return deviceId
    }

    // MARK: Follows

    public func addFollow(_ follow: FollowRecord) throws(StoreError) -> Bool {
        try requireDevice(follow.deviceId)
        guard followsByDevice[follow.deviceId]?[follow.matchId] == nil else { return false }
        followsByDevice[follow.deviceId, default: [:]][follow.matchId] = follow
        followersByMatch[follow.matchId, default: []].insert(follow.deviceId)
        followCount += 1
        return true
    }

    public func removeFollow(deviceId: String, matchId: String) -> Bool {
        guard followsByDevice[deviceId]?.removeValue(forKey: matchId) != nil else { return false }
        removeFollower(deviceId, of: matchId)
        return true
    }

    public func follows(deviceId: String) -> [FollowRecord] {
        (followsByDevice[deviceId] ?? [:]).values.sorted { $0.matchId < $1.matchId }
    }

    public func followers(matchId: String) -> [FollowRecord] {
        (followersByMatch[matchId] ?? []).compactMap { followsByDevice[$0]?[matchId] }.sorted { $0.deviceId < $1.deviceId }
    }

    public func followedMatchIds() -> [String] {
        followersByMatch.keys.sorted()
    }

    /// The index side of a removed follow.
    private func removeFollower(_ deviceId: String, of matchId: String) {
        followCount -= 1
        guard let position = followersByMatch.index(forKey: matchId) else { return }
        followersByMatch.values[position].remove(deviceId)
        if followersByMatch.values[position].isEmpty { followersByMatch.remove(at: position) }
    }

    // MARK: Outbox and dead letters

    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) throws(StoreError) {
        try saveActivities(records)  // validates everything before changing anything
        outbox.enqueue(deliveries)
    }

    public func queuedDeliveries(limit: Int) -> [Delivery] { outbox.queued(limit: limit) }

    public func removeQueuedDeliveries(ids: [String]) { outbox.remove(ids: ids) }

    public func queuedDeliveryCount() -> Int { outbox.count }

    public func recordDeadLetters(_ new: [DeadLetter]) { letters.record(new) }

    public func deadLetters(limit: Int) -> [DeadLetter] { letters.newest(limit: limit) }

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
            pushToStartTokens: tokens.count,
            updateTokens: activityTable.openTokenCount)
    }

    private func requireDevice(_ id: String) throws(StoreError) {
        guard devices[id] != nil else { throw .notFound("no device '\(id)'") }
    }
}
