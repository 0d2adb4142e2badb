import MatchcastCore

/// A store that lives and dies with the process: for tests, `replay`, and `--store memory`.
///
/// It keeps the values exactly as given (no JSON round trip), and follows the same rules as
/// `SQLiteStore`, checked by one shared contract suite.
public actor InMemoryStore: MatchcastStore {
    private var devices: [String: DeviceRecord] = [:]
    /// By device id.
    private var tokens: [String: PushToStartTokenRecord] = [:]
    /// Push-to-start token → the device holding it (at most one), so setting a token is not a scan.
    private var tokenOwners: [String: String] = [:]
    /// By device id, then match id.
    private var followsByDevice: [String: [String: FollowRecord]] = [:]
    private var activitiesById: [String: ActivityRecord] = [:]
    /// Update token → the open activity holding it, so a fan-out's save is not quadratic.
    private var openTokenHolder: [String: String] = [:]
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
        followsByDevice[id] = nil
        activitiesById = activitiesById.filter { $0.value.deviceId != id }
        openTokenHolder = openTokenHolder.filter { activitiesById[$0.value] != nil }
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
        return true
    }

    public func removeFollow(deviceId: String, matchId: String) -> Bool {
        followsByDevice[deviceId]?.removeValue(forKey: matchId) != nil
    }

    public func follows(deviceId: String) -> [FollowRecord] {
        (followsByDevice[deviceId] ?? [:]).values.sorted { $0.matchId < $1.matchId }
    }

    public func followers(matchId: String) -> [FollowRecord] {
        followsByDevice.values.compactMap { $0[matchId] }.sorted { $0.deviceId < $1.deviceId }
    }

    public func followedMatchIds() -> [String] {
        Set(followsByDevice.values.flatMap(\.keys)).sorted()
    }

    // MARK: Activities

    public func saveActivity(_ record: ActivityRecord) throws(StoreError) {
        try saveActivities([record])
    }

    public func saveActivities(_ records: [ActivityRecord]) throws(StoreError) {
        // Validate the whole batch against the saved state overlaid with the batch itself, so a
        // failure part-way leaves nothing saved, as a transaction would.
        var overlay: [String: ActivityRecord] = [:]
        var batchHolder: [String: String] = [:]
        for record in records {
            try record.validate()
            try requireDevice(record.deviceId)
            if record.isOpen, let token = record.updateToken {
                for holderId in [batchHolder[token], openTokenHolder[token]].compactMap({ $0 }) where holderId != record.activityId {
                    let holder = overlay[holderId] ?? activitiesById[holderId]
                    if let holder, holder.isOpen, holder.updateToken == token {
                        throw .conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holderId)'")
                    }
                }
                batchHolder[token] = record.activityId
            }
            overlay[record.activityId] = record
        }
        for record in records {
            if let old = activitiesById[record.activityId], let token = old.updateToken,
               openTokenHolder[token] == record.activityId {
                openTokenHolder[token] = nil
            }
            if record.isOpen, let token = record.updateToken { openTokenHolder[token] = record.activityId }
            activitiesById[record.activityId] = record
        }
    }

    public func activity(id: String) -> ActivityRecord? { activitiesById[id] }

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

    public func activities(matchId: String) -> [ActivityRecord] {
        activitiesById.values.filter { $0.matchId == matchId }.sorted { $0.activityId < $1.activityId }
    }

    public func activities(deviceId: String) -> [ActivityRecord] {
        activitiesById.values.filter { $0.deviceId == deviceId }.sorted { $0.activityId < $1.activityId }
    }

    public func activity(updateToken: String) -> ActivityRecord? {
        if let id = openTokenHolder[updateToken], let open = activitiesById[id] { return open }
        let holders = activitiesById.values.filter { $0.updateToken == updateToken }
        if let open = holders.first(where: \.isOpen) { return open }
        // Ties broken by id so the answer does not depend on dictionary order.
        return holders.max { ($0.updatedAt, $1.activityId) < ($1.updatedAt, $0.activityId) }
    }

    @discardableResult
    public func deleteActivity(id: String) -> Bool {
        guard let removed = activitiesById.removeValue(forKey: id) else { return false }
        if let token = removed.updateToken, openTokenHolder[token] == id { openTokenHolder[token] = nil }
        return true
    }

    public func openActivities() -> [ActivityRecord] {
        activitiesById.values.filter(\.isOpen).sorted { $0.activityId < $1.activityId }
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
            devices: devices.count, follows: followsByDevice.values.reduce(0) { $0 + $1.count },
            pushToStartTokens: tokens.count,
            updateTokens: activitiesById.values.filter { $0.isOpen && $0.updateToken != nil }.count)
    }

    private func requireDevice(_ id: String) throws(StoreError) {
        guard devices[id] != nil else { throw .notFound("no device '\(id)'") }
    }
}
