import Foundation
import MatchcastCore
import MatchcastStore

/// The open activities of one match as `LifecycleManager` keeps them between operations.
///
/// Each activity lives in a slot of its own (`ActivitySlots`), so a fan-out walks them in id order and changes
/// each one in place: no lookup by id, no copy of the record out and back. Lookups by device go through an index
/// kept beside the slots. A record that closes is dropped.
///
/// The cache also knows when a tick next has anything to do for the match (`hasNothingDue`), so that
/// `LifecycleManager.tick()` walks a match's activities only then, not every second: every change lowers
/// `earliestDue` to the changed activity's next deadline, and a walk over every activity (a tick's, `settle`, or a
/// fan-out's, `beginSweep`/`endSweep`) sets it exactly.
struct ActivityCache: Sendable {
    /// The rules that say when an activity next has something for a tick to do.
    let policy: ActivityPolicy
    private var slots = ActivitySlots()
    /// Slots in activity-id order, dropped ones included; rebuilt after an activity is added.
    private var order: [Int]?
    /// Device id → the slots of its open activities (one, unless the store held more), built on first use
    /// (`SlotIndex`: the ids are read from the records).
    private var slotsByDevice: SlotIndex?
    /// No activity has anything for a tick to do before this time (nil: never). A lower bound, exact after `settle`.
    private(set) var earliestDue: Date?
    /// `earliestDue` left out the refreshes of a stale feed: it no longer holds once the feed answers again.
    private var dueAssumesStaleFeed = false
    /// How many of the open activities are waiting to start (a tick may start them whenever their match is live).
    private(set) var waitingCount = 0
    /// While every activity is being changed in turn (`beginSweep()`): the earliest next deadline among them so far.
    private var sweep: Sweep?

    private struct Sweep {
        var due: Date?
    }

    init(policy: ActivityPolicy) {
        self.policy = policy
    }

    /// The open ones of `records` (closed ones are skipped).
    init(_ records: some Sequence<ActivityRecord>, policy: ActivityPolicy) {
        self.policy = policy
        for record in records where record.isOpen { put(record) }
    }

    var count: Int { slots.count }
    var isEmpty: Bool { slots.isEmpty }

    /// The open activity with this id.
    subscript(id: String) -> ActivityRecord? {
        slots.slot(id: id).flatMap { slots[$0] }
    }

    /// The slot of the open activity with this id, for `record(at:)` and `update(at:_:)`.
    func slot(id: String) -> Int? { slots.slot(id: id) }

    /// Every record, in no order.
    var records: some Sequence<ActivityRecord> { slots.records }

    /// Every record, in activity-id order (a copy: safe to change the cache while walking it).
    mutating func sorted() -> [ActivityRecord] {
        orderedSlots().compactMap { slots[$0] }
    }

    /// The device's open activities, in id order.
    mutating func records(deviceId: String) -> [ActivityRecord] {
        var found: [ActivityRecord] = []
        deviceIndex().forEach(hash: deviceId.hashValue) { slot in
            if let record = slots[slot], record.deviceId == deviceId { found.append(record) }
            return true
        }
        return found.sorted { ActivitySlots.precedes($0.activityId, $1.activityId) }
    }

    /// The id of the device's open activity (the lowest id, should the store have held two).
    mutating func openActivityId(deviceId: String) -> String? {
        records(deviceId: deviceId).first?.activityId
    }

    /// Caches `record` (replacing the one with its id), or drops it when it is closed.
    mutating func put(_ record: ActivityRecord) {
        if let slot = slots.slot(id: record.activityId) {
            let old = slots[slot]
            if old?.lifecycle.phase == .waiting { waitingCount -= 1 }
            slots.update(at: slot) { $0 = record }
            noteChange(of: record.lifecycle)
            reindexAfterChange(at: slot, from: old)
            return
        }
        guard record.isOpen else { return }
        noteChange(of: record.lifecycle)
        let slot = slots.add(record)
        slotsByDevice?.insert(slot, hash: record.deviceId.hashValue)
        order = nil
    }

    // MARK: Walking in place

    /// The slots in activity-id order (`ActivitySlots.precedes`), for `phase(at:)`, `record(at:)`
    /// and `update(at:_:)`. A slot dropped while walking reads as nil; no activity is added while walking (that
    /// would reuse slots).
    mutating func orderedSlots() -> [Int] {
        if let order { return order }
        let sorted = slots.slotsInIdOrder()
        order = sorted
        return sorted
    }

    /// The lowest and highest ids of the activities in `range` of `orderedSlots()`; nil when it holds none.
    func idRange(of range: ArraySlice<Int>) -> (from: String, through: String)? {
        guard let first = range.lazy.compactMap({ slots[$0]?.activityId }).first,
              let last = range.reversed().lazy.compactMap({ slots[$0]?.activityId }).first
        else { return nil }
        return (first, last)
    }

    /// The phase of the activity in `slot`, without copying it out (a stored field: a computed one such as
    /// `ActivityRecord.phase` would copy the whole record for its getter).
    func phase(at slot: Int) -> ActivityLifecycle.Phase? { slots[slot]?.lifecycle.phase }

    /// A copy of the activity in `slot`.
    func record(at slot: Int) -> ActivityRecord? { slots[slot] }

    /// Changes the activity in `slot` in place. If it is closed afterwards, it is dropped (and returned one last
    /// time by the caller's own means). The activity's id, match and device must not change.
    mutating func update<R>(at slot: Int, _ body: (inout ActivityRecord) -> R) -> R {
        if phase(at: slot) == .waiting { waitingCount -= 1 }
        let policy = policy
        let (result, phase, due) = slots.update(at: slot) { record in
            let result = body(&record)
            return (result, record.lifecycle.phase, record.lifecycle.nextDeadline(policy: policy))
        }
        if phase == .waiting { waitingCount += 1 }
        lowerEarliestDue(to: due)
        if phase == .ended { drop(slot) }
        return result
    }

    // MARK: When a tick has something to do

    /// Whether a tick at `moment` has nothing to do here: no deadline has come, the feed is not fresh again after
    /// a walk that left its refreshes out, and no activity waits to start while the match is live (a tick starts
    /// those once their device may start one: spacing, push-to-start token, lease). An empty cache always has
    /// something due: the tick forgets its match once the match is over.
    func hasNothingDue(at moment: Date, feedIsFresh: Bool, matchIsLive: Bool) -> Bool {
        if isEmpty || (waitingCount > 0 && matchIsLive) || (dueAssumesStaleFeed && feedIsFresh) { return false }
        guard let earliestDue else { return true }
        return earliestDue > moment
    }

    /// A tick walked every activity: `due` is the earliest of their next deadlines, worked out for a feed that is
    /// fresh or not as `feedIsFresh` says.
    mutating func settle(due: Date?, feedIsFresh: Bool) {
        earliestDue = due
        dueAssumesStaleFeed = !feedIsFresh
    }

    /// Every open activity is about to be changed in turn (a fan-out): their next deadlines, seen as they change,
    /// set `earliestDue` exactly at `endSweep()`, so that deadlines the changes replaced no longer count.
    mutating func beginSweep() {
        sweep = Sweep()
    }

    /// Every activity open at `beginSweep()` was changed since (through `update(at:)` or `put`).
    mutating func endSweep() {
        guard let sweep else { return }
        self.sweep = nil
        settle(due: sweep.due, feedIsFresh: true)
    }

    // MARK: Internals

    /// An activity changed to `lifecycle` (or was added): its next deadline, worked out as if the feed were fresh (the
    /// earliest it can be), may come before every other.
    private mutating func noteChange(of lifecycle: ActivityLifecycle) {
        if lifecycle.phase == .waiting { waitingCount += 1 }
        lowerEarliestDue(to: lifecycle.nextDeadline(policy: policy))
    }

    private mutating func lowerEarliestDue(to due: Date?) {
        guard let due else { return }
        earliestDue = min(earliestDue ?? due, due)
        if let sweeping = sweep { sweep?.due = min(sweeping.due ?? due, due) }
    }

    private mutating func reindexAfterChange(at slot: Int, from old: ActivityRecord?) {
        guard let record = slots[slot] else { return }
        // The device index first, so a record that moves and closes at once is dropped from its new device.
        if let old, old.deviceId != record.deviceId {
            slotsByDevice?.remove(slot, hash: old.deviceId.hashValue)
            slotsByDevice?.insert(slot, hash: record.deviceId.hashValue)
        }
        if !record.isOpen { drop(slot) }
    }

    /// Frees the slot of a record that ended (never counted in `waitingCount`).
    private mutating func drop(_ slot: Int) {
        guard let record = slots.remove(at: slot) else { return }
        slotsByDevice?.remove(slot, hash: record.deviceId.hashValue)
    }

    private mutating func deviceIndex() -> SlotIndex {
        if let slotsByDevice { return slotsByDevice }
        var index = SlotIndex()
        for slot in slots.usedSlots {
            if let deviceId = slots[slot]?.deviceId { index.insert(slot, hash: deviceId.hashValue) }
        }
        slotsByDevice = index
        return index
    }
}
