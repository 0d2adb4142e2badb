import MatchcastCore

extension InMemoryStore {
    public func saveActivity(_ record: ActivityRecord) throws(StoreError) {
        try saveActivities([record])
    }

    public func saveActivities(_ records: [ActivityRecord]) throws(StoreError) {
        try activityTable.save(records, devices: devices)
    }

    public func activity(id: String) -> ActivityRecord? { activityTable.record(id: id) }

    public func activities(matchId: String) -> [ActivityRecord] { activityTable.records(matchId: matchId) }

    public func activities(deviceId: String) -> [ActivityRecord] { activityTable.records(deviceId: deviceId) }

    public func activity(updateToken: String) -> ActivityRecord? { activityTable.record(updateToken: updateToken) }

    @discardableResult
    public func deleteActivity(id: String) -> Bool { activityTable.remove(id: id) }

    public func openActivities() -> [ActivityRecord] { activityTable.openRecords() }
}

/// The activities of `InMemoryStore`, with indexes by match, device and update token, so that every call costs
/// what its arguments (and its answer) cost, not what the whole store holds.
///
/// Records live in slots (`ActivitySlots`); the indexes hold slot numbers.
/// Saving a batch follows SQLite's rules: the records are checked one after the other, each against the
/// store as the batch's earlier records leave it, and nothing is written unless all of them pass.
struct ActivityTable: Sendable {
    private var slots = ActivitySlots()
    /// By slot: the number of the last batch that saw a record of this slot take the slow path.
    private var seenInBatch: [UInt64] = []
    private var slotsByMatch: [String: SlotSet] = [:]
    /// Device id → the slots of its activities (`SlotIndex`: the ids are read from the records).
    private var slotsByDevice = SlotIndex()
    /// Update token → the open activity holding it (at most one, the rule a save checks).
    private var openHolders = SlotIndex()
    /// Update token → the ended activities that held it, for a lookup when no open one does.
    private var endedHolders: [String: SlotSet] = [:]
    private var batch: UInt64 = 0
    /// By slot: the slot of the record saved right after this slot's the last time (-1: none yet). A fan-out saves a
    /// match's activities in the same order every time (activity-id order, chunk after chunk), so the slot that came
    /// next last time is checked first, by comparing the ids (the same string: compared by identity), before the id
    /// is hashed and looked up. A stale guess (a slot since reused) fails the comparison.
    private var successors: [Int32] = []
    /// The slot of the last record saved (-1: none), across batches: a fan-out's chunks come one batch each.
    private var lastSaved = -1

    /// Update tokens held by open activities.
    var openTokenCount: Int { openHolders.count }
    /// Those of `openTokenCount` that are an Android or web device's activity's (`DirectAddress`), counted apart from
    /// iPhones' update tokens (`matchcast_tokens{kind="update"}`).
    private(set) var openDirectTokenCount = 0

    // MARK: Saving

    /// Saves the records all or nothing. `devices` tells which device ids exist.
    mutating func save(_ records: [ActivityRecord], devices: DeviceTable) throws(StoreError) {
        guard !records.isEmpty else { return }
        // Records are read in place, through a span: reading an array's element, even to call a method on it,
        // copies it, and a copy of a record is a dozen retains (cache misses, for 100,000 activities).
        let records = records.span
        batch &+= 1
        // Per record: its slot when nothing but the record itself changes (the fast path), else -1.
        var plan: [Int] = []
        plan.reserveCapacity(records.count)
        // The slow path's view of the tokens as the batch leaves them so far.
        var claimed: [String: String] = [:]  // token → the activity id that claimed it in the batch
        var claimOf: [String: String] = [:]  // activity id → the token it claimed in the batch
        var released: Set<String> = []  // tokens whose stored open holder the batch closed or moved
        for index in records.indices {
            try records[index].validate()
            let slot = slot(of: records[index].lifecycle.activityId)
            // The fan-out case: the stored record has the same device, match, token and openness, and no
            // earlier record of the batch changed it: no index changes, no token is claimed anew. (Its device
            // exists: deleting a device deletes its activities.)
            // Compared stored field by stored field: passing a record to a function, or reading a computed
            // property of it (`isOpen`), copies the whole record for the call.
            if let slot, seenInBatch[slot] != batch, slots[slot]?.deviceId == records[index].deviceId,
               slots[slot]?.lifecycle.matchId == records[index].lifecycle.matchId,
               slots[slot]?.lifecycle.storedUpdateToken == records[index].lifecycle.storedUpdateToken,
               (slots[slot]?.lifecycle.phase == .ended) == (records[index].lifecycle.phase == .ended) {
                plan.append(slot)
                continue
            }
            let record = records[index]
            let id = record.activityId
            plan.append(-1)
            guard devices.contains(id: record.deviceId) else { throw .notFound("no device '\(record.deviceId)'") }
            if let slot {
                seenInBatch[slot] = batch
                // What the stored record held is let go (it may claim it again below).
                if let token = slots[slot]?.updateToken, openHolder(token) == slot { released.insert(token) }
            }
            if let previous = claimOf.removeValue(forKey: id) { claimed[previous] = nil }
            guard record.isOpen, let token = record.updateToken else { continue }
            let holder = claimed[token] ?? (released.contains(token) ? nil : openHolder(token).flatMap { slots[$0]?.activityId })
            if let holder, holder != id {
                throw .conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holder)'")
            }
            claimed[token] = id
            claimOf[id] = token
        }
        for index in records.indices {
            if plan[index] >= 0 {
                // Only what changed is written: the stored record already holds the same id, device and token strings.
                slots.update(at: plan[index]) { stored in
                    stored.environment = records[index].environment
                    stored.lifecycle.catchUp(to: records[index].lifecycle)
                    stored.updatedAt = records[index].updatedAt
                }
            } else {
                apply(records[index])
            }
        }
    }

    /// The slot of the stored record with this id: the one saved after the last record saved the last time, when it
    /// is (`successors`), else found by the id.
    private mutating func slot(of id: String) -> Int? {
        let previous = lastSaved
        if previous >= 0, previous < successors.count {
            let guess = Int(successors[previous])
            if guess >= 0, slots[guess]?.lifecycle.activityId == id {
                lastSaved = guess
                return guess
            }
        }
        let found = slots.slot(id: id)
        if let found, previous >= 0, previous < successors.count { successors[previous] = Int32(truncatingIfNeeded: found) }
        lastSaved = found ?? -1
        return found
    }

    /// Writes a record that passed the checks, and updates the indexes.
    private mutating func apply(_ record: ActivityRecord) {
        if let slot = slots.slot(id: record.activityId), let old = slots[slot] {
            unindex(old, slot)
            slots.update(at: slot) { $0 = record }
            index(record, slot)
            return
        }
        let slot = slots.add(record)
        if seenInBatch.count < slots.capacity { seenInBatch.append(0) }
        if successors.count < slots.capacity { successors.append(-1) }
        index(record, slot)
    }

    private mutating func index(_ record: ActivityRecord, _ slot: Int) {
        slotsByMatch.insert(slot, under: record.matchId)
        slotsByDevice.insert(slot, hash: record.deviceId.hashValue)
        guard let token = record.updateToken else { return }
        if record.isOpen {
            // A holder the batch releases later may still be indexed: the token is this record's from now on.
            let hash = token.hashValue
            if let previous = openHolder(token, hash: hash) {
                openHolders.remove(previous, hash: hash)
            } else if DirectAddress.isDirect(token) {
                openDirectTokenCount += 1
            }
            openHolders.insert(slot, hash: hash)
        } else {
            endedHolders.insert(slot, under: token)
        }
    }

    private mutating func unindex(_ record: ActivityRecord, _ slot: Int) {
        slotsByMatch.remove(slot, under: record.matchId)
        slotsByDevice.remove(slot, hash: record.deviceId.hashValue)
        guard let token = record.updateToken else { return }
        if record.isOpen {
            if openHolders.remove(slot, hash: token.hashValue) {
                if DirectAddress.isDirect(token) { openDirectTokenCount -= 1 }
            }
        } else {
            endedHolders.remove(slot, under: token)
        }
    }

    // MARK: Removing

    /// False when there was no such activity.
    @discardableResult
    mutating func remove(id: String) -> Bool {
        guard let slot = slots.slot(id: id), let old = slots.remove(at: slot) else { return false }
        unindex(old, slot)
        return true
    }

    /// Removes every activity of the device.
    mutating func remove(deviceId: String) {
        for slot in slots(deviceId: deviceId) {
            if let id = slots[slot]?.activityId { remove(id: id) }
        }
    }

    // MARK: Reading

    func record(id: String) -> ActivityRecord? {
        slots.slot(id: id).flatMap { slots[$0] }
    }

    /// Sorted by activity id.
    func records(matchId: String) -> [ActivityRecord] { sorted(slotsByMatch[matchId]) }

    /// Sorted by activity id.
    func records(deviceId: String) -> [ActivityRecord] {
        slots(deviceId: deviceId).compactMap { slots[$0] }.sorted { $0.activityId < $1.activityId }
    }

    /// The open activity holding the token; failing that, the most recently updated ended one (ties: lowest id).
    func record(updateToken: String) -> ActivityRecord? {
        if let slot = openHolder(updateToken), let open = slots[slot] { return open }
        return (endedHolders[updateToken]?.slots ?? []).compactMap { slots[$0] }
            .max { ($0.updatedAt, $1.activityId) < ($1.updatedAt, $0.activityId) }
    }

    /// Every open activity, sorted by activity id.
    func openRecords() -> [ActivityRecord] {
        slots.records.filter(\.isOpen).sorted { $0.activityId < $1.activityId }
    }

    /// The open activity holding `token` (`hash`: its hash value, when the caller has it already).
    private func openHolder(_ token: String, hash: Int? = nil) -> Int? {
        let kept = CompactToken(token)
        return openHolders.first(hash: hash ?? token.hashValue) { slots[$0]?.lifecycle.storedUpdateToken == kept }
    }

    /// The slots of the device's activities.
    private func slots(deviceId: String) -> [Int] {
        var found: [Int] = []
        slotsByDevice.forEach(hash: deviceId.hashValue) { slot in
            if slots[slot]?.deviceId == deviceId { found.append(slot) }
            return true
        }
        return found
    }

    private func sorted(_ slots: SlotSet?) -> [ActivityRecord] {
        (slots?.slots ?? []).compactMap { self.slots[$0] }.sorted { $0.activityId < $1.activityId }
    }
}
