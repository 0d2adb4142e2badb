import Foundation
import MatchcastCore
import MatchcastStore

/// `InMemoryStore`'s rules with indexes, for benchmarks at 100,000 activities: every call costs
/// what its arguments cost, not what the whole store holds.
///
/// `InMemoryStore` scans every activity for each update token it saves or looks up, and copies
/// its activity dictionary on every save, so filling it with N activities that hold update tokens,
/// or saving a fan-out of N of them, is O(N²) (hours at N = 100,000). This store keeps the same
/// answers (same conflicts, same ordering) with an index by update token, match and device, and
/// validates a batch before applying it instead of copying. It is what `InMemoryStore` could
/// become; the contract tests are the way to prove that before it does.
actor IndexedMemoryStore: MatchcastStore {
    private var devices: [String: DeviceRecord] = [:]
    /// By device id; `tokenOwners` maps each token back.
    private var tokens: [String: PushToStartTokenRecord] = [:]
    private var tokenOwners: [String: String] = [:]
    private var followsByDevice: [String: [String: FollowRecord]] = [:]
    private var followersByMatch: [String: Set<String>] = [:]
    private var activitiesById: [String: ActivityRecord] = [:]
    private var activityIdsByMatch: [String: Set<String>] = [:]
    private var activityIdsByDevice: [String: Set<String>] = [:]
    /// Every activity that ever held a token (open or not), by token.
    private var holdersByToken: [String: Set<String>] = [:]
    /// The open activity holding each token (at most one).
    private var openHolderByToken: [String: String] = [:]
    private var matchesById: [String: MatchRecord] = [:]
    private var outbox = OutboxQueue()
    private var letters = DeadLetterList()

    init() {}

    // MARK: Devices

    func createDevice(_ device: DeviceRecord) throws(StoreError) {
        guard devices[device.id] == nil else { throw .conflict }
        devices[device.id] = device
    }

    func device(id: String) -> DeviceRecord? { devices[id] }

    @discardableResult
    func deleteDevice(id: String) -> Bool {
        guard devices.removeValue(forKey: id) != nil else { return false }
        if let token = tokens.removeValue(forKey: id)?.token { tokenOwners[token] = nil }
        for matchId in followsByDevice.removeValue(forKey: id)?.keys ?? [:].keys { followersByMatch[matchId]?.remove(id) }
        for activityId in activityIdsByDevice[id] ?? [] { removeActivity(activityId) }
        return true
    }

    // MARK: Push-to-start tokens

    func setPushToStartToken(_ record: PushToStartTokenRecord) throws(StoreError) {
        try requireDevice(record.deviceId)
        if let owner = tokenOwners[record.token], owner != record.deviceId { tokens[owner] = nil }
        if let previous = tokens[record.deviceId]?.token { tokenOwners[previous] = nil }
        tokens[record.deviceId] = record
        tokenOwners[record.token] = record.deviceId
    }

    func pushToStartToken(deviceId: String) -> PushToStartTokenRecord? { tokens[deviceId] }

    func removePushToStartToken(token: String) -> String? {
        guard let owner = tokenOwners.removeValue(forKey: token) else { return nil }
        tokens[owner] = nil
        return owner
    }

    // MARK: Follows

    func addFollow(_ follow: FollowRecord) throws(StoreError) -> Bool {
        try requireDevice(follow.deviceId)
        guard followsByDevice[follow.deviceId]?[follow.matchId] == nil else { return false }
        followsByDevice[follow.deviceId, default: [:]][follow.matchId] = follow
        followersByMatch[follow.matchId, default: []].insert(follow.deviceId)
        return true
    }

    func removeFollow(deviceId: String, matchId: String) -> Bool {
        guard followsByDevice[deviceId]?.removeValue(forKey: matchId) != nil else { return false }
        followersByMatch[matchId]?.remove(deviceId)
        return true
    }

    func follows(deviceId: String) -> [FollowRecord] {
        (followsByDevice[deviceId] ?? [:]).values.sorted { $0.matchId < $1.matchId }
    }

    func followers(matchId: String) -> [FollowRecord] {
        (followersByMatch[matchId] ?? []).compactMap { followsByDevice[$0]?[matchId] }.sorted { $0.deviceId < $1.deviceId }
    }

    func followedMatchIds() -> [String] {
        followersByMatch.filter { !$0.value.isEmpty }.keys.sorted()
    }

    // MARK: Activities

    func saveActivity(_ record: ActivityRecord) throws(StoreError) {
        try saveActivities([record])
    }

    /// All or nothing, as `InMemoryStore`: the whole batch is checked (against the store and the
    /// batch's own earlier records) before any of it is applied.
    func saveActivities(_ records: [ActivityRecord]) throws(StoreError) {
        var claimed: [String: String] = [:]  // token → activity id, as the batch leaves them
        var claimOf: [String: String] = [:]  // activity id → the token it claimed in the batch
        var released: Set<String> = []  // tokens whose open holder the batch closes or moves
        for record in records {
            guard !record.activityId.isEmpty, !record.deviceId.isEmpty, !record.matchId.isEmpty,
                  record.lifecycle.activityId == record.activityId, record.lifecycle.matchId == record.matchId
            else { throw .invalid }
            try requireDevice(record.deviceId)
            // What this record held before (in the store or earlier in the batch) is let go.
            if let old = activitiesById[record.activityId]?.updateToken, openHolderByToken[old] == record.activityId {
                released.insert(old)
            }
            if let previous = claimOf.removeValue(forKey: record.activityId) { claimed[previous] = nil }
            guard record.isOpen, let token = record.updateToken else { continue }
            let holder = claimed[token] ?? (released.contains(token) ? nil : openHolderByToken[token])
            if let holder, holder != record.activityId { throw .conflict }
            claimed[token] = record.activityId
            claimOf[record.activityId] = token
        }
        for record in records { apply(record) }
    }

    func activity(id: String) -> ActivityRecord? { activitiesById[id] }

    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) throws(StoreError) {
        try saveActivities(records)
        outbox.enqueue(deliveries)
    }

    func queuedDeliveries(limit: Int) -> [Delivery] { outbox.queued(limit: limit) }
    func removeQueuedDeliveries(ids: [String]) { outbox.remove(ids: ids) }
    func queuedDeliveryCount() -> Int { outbox.count }
    func recordDeadLetters(_ new: [DeadLetter]) { letters.record(new) }
    func deadLetters(limit: Int) -> [DeadLetter] { letters.newest(limit: limit) }

    func activities(matchId: String) -> [ActivityRecord] {
        records(activityIdsByMatch[matchId])
    }

    func activities(deviceId: String) -> [ActivityRecord] {
        records(activityIdsByDevice[deviceId])
    }

    func activity(updateToken: String) -> ActivityRecord? {
        if let open = openHolderByToken[updateToken] { return activitiesById[open] }
        let holders = (holdersByToken[updateToken] ?? []).compactMap { activitiesById[$0] }
            .filter { $0.updateToken == updateToken }
        return holders.max { ($0.updatedAt, $1.activityId) < ($1.updatedAt, $0.activityId) }
    }

    @discardableResult
    func deleteActivity(id: String) -> Bool {
        guard activitiesById[id] != nil else { return false }
        removeActivity(id)
        return true
    }

    func openActivities() -> [ActivityRecord] {
        activitiesById.values.filter(\.isOpen).sorted { $0.activityId < $1.activityId }
    }

    // MARK: Matches

    func saveMatch(_ record: MatchRecord) throws(StoreError) {
        guard record.matchId == record.snapshot.id else { throw .invalid }
        matchesById[record.matchId] = record
    }

    func match(id: String) -> MatchRecord? { matchesById[id] }

    func matches() -> [MatchRecord] {
        matchesById.values.sorted { $0.matchId < $1.matchId }
    }

    @discardableResult
    func deleteMatch(id: String) -> Bool {
        matchesById.removeValue(forKey: id) != nil
    }

    // MARK: Health

    func ping() {}

    func census() -> StoreCensus {
        StoreCensus(
            devices: devices.count, follows: followsByDevice.values.reduce(0) { $0 + $1.count },
            pushToStartTokens: tokens.count, updateTokens: openHolderByToken.count)
    }

    // MARK: Internals

    private func requireDevice(_ id: String) throws(StoreError) {
        guard devices[id] != nil else { throw .notFound }
    }

    private func records(_ ids: Set<String>?) -> [ActivityRecord] {
        (ids ?? []).compactMap { activitiesById[$0] }.sorted { $0.activityId < $1.activityId }
    }

    private func apply(_ record: ActivityRecord) {
        let id = record.activityId
        let old = activitiesById.updateValue(record, forKey: id)
        // The common case, a fan-out: same activity, same token, still open; no index changes.
        if let old, old.matchId == record.matchId, old.deviceId == record.deviceId,
           old.updateToken == record.updateToken, old.isOpen == record.isOpen {
            return
        }
        if let old, let token = old.updateToken, openHolderByToken[token] == id,
           !(record.isOpen && record.updateToken == token) {
            openHolderByToken[token] = nil
        }
        if let old, old.matchId != record.matchId { activityIdsByMatch[old.matchId]?.remove(id) }
        if let old, old.deviceId != record.deviceId { activityIdsByDevice[old.deviceId]?.remove(id) }
        activityIdsByMatch[record.matchId, default: []].insert(id)
        activityIdsByDevice[record.deviceId, default: []].insert(id)
        if let token = record.updateToken {
            holdersByToken[token, default: []].insert(id)
            if record.isOpen { openHolderByToken[token] = id }
        }
    }

    private func removeActivity(_ id: String) {
        guard let record = activitiesById.removeValue(forKey: id) else { return }
        activityIdsByMatch[record.matchId]?.remove(id)
        activityIdsByDevice[record.deviceId]?.remove(id)
        if let token = record.updateToken {
            holdersByToken[token]?.remove(id)
            if openHolderByToken[token] == id { openHolderByToken[token] = nil }
        }
    }
}
