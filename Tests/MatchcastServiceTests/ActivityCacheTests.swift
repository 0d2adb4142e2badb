import Foundation
import MatchcastCore
import MatchcastStore
import Testing
@testable import MatchcastService

/// Records for the cache: open ones (adopted, so `active`) and closed ones (`ended`), of one match.
private enum CacheFixture {
    static let matchId = "epl-ars-che"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// An open (active) record.
    static func open(_ activityId: String, device: String, token: String = "tok", at seconds: Double = 0) -> ActivityRecord {
        let lifecycle = ActivityLifecycle.adopted(
            activityId: activityId, matchId: matchId, updateToken: token, now: now.addingTimeInterval(seconds))
        return ActivityRecord(deviceId: device, environment: .production, lifecycle: lifecycle,
                              updatedAt: now.addingTimeInterval(seconds))
    }

    /// The same activity, closed (dismissed on the device: ended without a push).
    static func closed(_ record: ActivityRecord) -> ActivityRecord {
        var record = record
        _ = record.lifecycle.end(.dismissed, now: now)
        precondition(!record.isOpen)
        return record
    }

    static func closed(_ activityId: String, device: String) -> ActivityRecord {
        closed(open(activityId, device: device))
    }

    /// The ids of the records the ordered slots hold, nil for a dropped slot.
    static func ids(_ cache: inout ActivityCache) -> [String?] {
        cache.orderedSlots().map { cache.record(at: $0)?.activityId }
    }
}


@Suite("ActivityCache: slots, id order and the device index")
struct ActivityCacheTests {
    fileprivate typealias F = CacheFixture

    // MARK: put

    @Test("put inserts, replaces the record with the same id, and drops it when the new version is closed")
    func putInsertsReplacesAndDrops() {
        var cache = ActivityCache(policy: ActivityPolicy())
        #expect(cache.isEmpty)
        #expect(cache.count == 0)

        let a = F.open("act_a", device: "dev_1")
        cache.put(a)
        #expect(cache.count == 1)
        #expect(!cache.isEmpty)
        #expect(cache["act_a"] == a)
        #expect(cache["act_b"] == nil)

        // Replaced, not added: same id, newer version.
        var newer = a
        newer.updatedAt = F.now.addingTimeInterval(60)
        _ = newer.lifecycle.updateTokenRegistered("tok-rotated", now: newer.updatedAt, policy: ActivityPolicy())
        cache.put(newer)
        #expect(cache.count == 1)
        #expect(cache["act_a"] == newer)
        #expect(cache["act_a"]?.updateToken == "tok-rotated")
        #expect(Array(cache.records) == [newer])

        // Closed: dropped.
        cache.put(F.closed(newer))
        #expect(cache.count == 0)
        #expect(cache.isEmpty)
        #expect(cache["act_a"] == nil)
        #expect(Array(cache.records).isEmpty)
        #expect(cache.sorted().isEmpty)
    }

    @Test("a closed record of an activity the cache does not hold is not added")
    func closedNewRecordIsIgnored() {
        var cache = ActivityCache(policy: ActivityPolicy())
        cache.put(F.open("act_a", device: "dev_1"))
        cache.put(F.closed("act_b", device: "dev_2"))
        #expect(cache.count == 1)
        #expect(cache["act_b"] == nil)
        #expect(cache.records(deviceId: "dev_2").isEmpty)
        #expect(F.ids(&cache) == ["act_a"])
    }

    @Test("init keeps the open records and skips the closed ones")
    func initSkipsClosedRecords() {
        let records = [
            F.open("act_c", device: "dev_3"), F.closed("act_x", device: "dev_9"), F.open("act_a", device: "dev_1"),
            F.closed("act_b", device: "dev_1"), F.open("act_d", device: "dev_1"),
        ]
        var cache = ActivityCache(records, policy: ActivityPolicy())
        #expect(cache.count == 3)
        #expect(cache["act_x"] == nil)
        #expect(cache["act_b"] == nil)
        #expect(Set(cache.records.map(\.activityId)) == ["act_a", "act_c", "act_d"])
        #expect(cache.sorted().map(\.activityId) == ["act_a", "act_c", "act_d"])
        #expect(cache.records(deviceId: "dev_1").map(\.activityId) == ["act_a", "act_d"])
        #expect(cache.records(deviceId: "dev_9").isEmpty)
        #expect(ActivityCache([F.closed("act_z", device: "dev_1")], policy: ActivityPolicy()).isEmpty)
    }

    @Test("records holds every open record once, in any order; count and isEmpty follow puts and drops")
    func recordsCountAndIsEmpty() {
        var cache = ActivityCache(policy: ActivityPolicy())
        var expected: [String: ActivityRecord] = [:]
        for n in [5, 1, 4, 2, 3] {
            let record = F.open("act_\(n)", device: "dev_\(n % 2)")
            cache.put(record)
            expected[record.activityId] = record
            #expect(cache.count == expected.count)
        }
        #expect(Dictionary(uniqueKeysWithValues: cache.records.map { ($0.activityId, $0) }) == expected)
        #expect(Array(cache.records).count == 5)
        for id in ["act_2", "act_5", "act_1", "act_4", "act_3"] {
            cache.put(F.closed(expected[id]!))
            expected[id] = nil
            #expect(cache.count == expected.count)
            #expect(Set(cache.records.map(\.activityId)) == Set(expected.keys))
        }
        #expect(cache.isEmpty)
    }

    // MARK: Slots and order

    @Test("orderedSlots gives activity-id order whatever the order of the puts")
    func orderedSlotsInIdOrder() {
        var cache = ActivityCache(policy: ActivityPolicy())
        let ids = (0..<200).map { String(format: "act_%04d", ($0 * 7919) % 200) }  // a permutation
        for id in ids { cache.put(F.open(id, device: "dev_\(id)")) }
        #expect(F.ids(&cache) == ids.sorted())
        #expect(cache.sorted().map(\.activityId) == ids.sorted())
        #expect(Set(cache.orderedSlots()).count == 200, "one slot per activity")
    }

    @Test("a dropped slot reads nil in the order already taken; a new activity reuses it and the order is right again")
    func slotReuseKeepsOrder() {
        var cache = ActivityCache(policy: ActivityPolicy())
        for id in ["act_c", "act_a", "act_e", "act_b", "act_d"] { cache.put(F.open(id, device: "dev_\(id)")) }
        let before = cache.orderedSlots()
        #expect(F.ids(&cache) == ["act_a", "act_b", "act_c", "act_d", "act_e"])

        // Drop act_b: its slot reads nil, the others keep their slots and their order.
        let slotOfB = before[1]
        cache.put(F.closed("act_b", device: "dev_act_b"))
        #expect(cache.record(at: slotOfB) == nil)
        #expect(cache.phase(at: slotOfB) == nil)
        #expect(cache.orderedSlots().compactMap { cache.record(at: $0)?.activityId } == ["act_a", "act_c", "act_d", "act_e"])
        #expect(cache.sorted().map(\.activityId) == ["act_a", "act_c", "act_d", "act_e"])

        // A new activity takes the freed slot; the order is rebuilt, in id order, without holes.
        cache.put(F.open("act_f", device: "dev_act_f"))
        #expect(cache.count == 5)
        let after = cache.orderedSlots()
        #expect(after.contains(slotOfB), "the freed slot is reused")
        #expect(cache.record(at: slotOfB)?.activityId == "act_f")
        #expect(F.ids(&cache) == ["act_a", "act_c", "act_d", "act_e", "act_f"])

        // One that sorts first, into a slot freed in the middle.
        cache.put(F.closed("act_d", device: "dev_act_d"))
        cache.put(F.open("act_0", device: "dev_act_0"))
        #expect(F.ids(&cache) == ["act_0", "act_a", "act_c", "act_e", "act_f"])
        #expect(cache["act_0"]?.deviceId == "dev_act_0")
        #expect(cache["act_d"] == nil)
        #expect(cache["act_f"]?.deviceId == "dev_act_f")
    }

    @Test("many drops and re-adds: the cache always agrees with a plain dictionary")
    func churnAgreesWithADictionary() {
        var cache = ActivityCache(policy: ActivityPolicy())
        var model: [String: ActivityRecord] = [:]
        var rng = SeededGenerator(seed: 42)  // reproducible
        for step in 0..<2_000 {
            let id = "act_\(Int.random(in: 0..<60, using: &rng))"
            let device = "dev_\(Int.random(in: 0..<10, using: &rng))"
            if Bool.random(using: &rng), let existing = model[id] {
                cache.put(F.closed(existing))
                model[id] = nil
            } else {
                let record = F.open(id, device: device, at: Double(step))
                cache.put(record)
                model[id] = record
            }
            if step % 50 == 0 {
                #expect(cache.sorted() == model.values.sorted { $0.activityId < $1.activityId })
                #expect(cache.count == model.count)
                for d in 0..<10 {
                    let expected = model.values.filter { $0.deviceId == "dev_\(d)" }.sorted { $0.activityId < $1.activityId }
                    #expect(cache.records(deviceId: "dev_\(d)") == expected)
                }
            }
        }
    }

    // MARK: update(at:)

    @Test("update(at:) changes the record in its slot and returns the body's result")
    func updateInPlace() {
        var cache = ActivityCache(policy: ActivityPolicy())
        for id in ["act_b", "act_a", "act_c"] { cache.put(F.open(id, device: "dev_\(id)")) }
        let slots = cache.orderedSlots()
        let later = F.now.addingTimeInterval(90)
        let result = cache.update(at: slots[1]) { record -> String in
            record.updatedAt = later
            _ = record.lifecycle.updateTokenRegistered("tok-new", now: later, policy: ActivityPolicy())
            return record.activityId
        }
        #expect(result == "act_b")
        #expect(cache["act_b"]?.updatedAt == later)
        #expect(cache["act_b"]?.updateToken == "tok-new")
        #expect(cache.record(at: slots[1])?.updateToken == "tok-new")
        #expect(cache["act_a"]?.updateToken == "tok", "the others are untouched")
        #expect(cache["act_c"]?.updateToken == "tok")
        #expect(cache.count == 3)
        #expect(cache.orderedSlots() == slots, "the order is not rebuilt by a change in place")
        #expect(cache.records(deviceId: "dev_act_b").map(\.updateToken) == ["tok-new"])
    }

    @Test("update(at:) drops the record when the body closes it; its slot reads nil and the others walk on")
    func updateDropsWhenClosed() {
        var cache = ActivityCache(policy: ActivityPolicy())
        for id in ["act_a", "act_b", "act_c"] { cache.put(F.open(id, device: "dev_1")) }
        #expect(cache.openActivityId(deviceId: "dev_1") == "act_a")  // the device index is built
        let slots = cache.orderedSlots()

        // Walk the slots as a fan-out does, closing the first two.
        var seen: [String] = []
        for slot in slots {
            guard cache.phase(at: slot) != nil else { continue }
            let id = cache.update(at: slot) { record -> String in
                if record.activityId != "act_c" { _ = record.lifecycle.end(.dismissed, now: F.now) }
                return record.activityId
            }
            seen.append(id)
        }
        #expect(seen == ["act_a", "act_b", "act_c"])
        #expect(cache.count == 1)
        #expect(cache["act_a"] == nil)
        #expect(cache["act_b"] == nil)
        #expect(cache.record(at: slots[0]) == nil)
        #expect(cache.phase(at: slots[1]) == nil)
        #expect(cache.records(deviceId: "dev_1").map(\.activityId) == ["act_c"])
        #expect(cache.openActivityId(deviceId: "dev_1") == "act_c")
        #expect(cache.sorted().map(\.activityId) == ["act_c"])

        // The freed slots are reused, and the order is right again.
        cache.put(F.open("act_0", device: "dev_2"))
        cache.put(F.open("act_z", device: "dev_2"))
        #expect(Set([slots[0], slots[1]]) == Set(cache.orderedSlots().filter { $0 != slots[2] }))
        #expect(F.ids(&cache) == ["act_0", "act_c", "act_z"])
        #expect(cache.records(deviceId: "dev_2").map(\.activityId) == ["act_0", "act_z"])
        #expect(cache.records(deviceId: "dev_1").map(\.activityId) == ["act_c"])
    }

    // MARK: Device index

    @Test("the device index follows puts, replaces, drops and a device change, built before or after them")
    func deviceIndexFollowsChanges() {
        for buildIndexFirst in [true, false] {
            var cache = ActivityCache(policy: ActivityPolicy())
            cache.put(F.open("act_b", device: "dev_1"))
            cache.put(F.open("act_a", device: "dev_1"))
            cache.put(F.open("act_c", device: "dev_2"))
            if buildIndexFirst {
                #expect(cache.records(deviceId: "dev_1").map(\.activityId) == ["act_a", "act_b"])
                #expect(cache.openActivityId(deviceId: "dev_1") == "act_a", "the lowest id")
            }
            // Added.
            cache.put(F.open("act_d", device: "dev_2"))
            // Replaced, same device: still listed once.
            var newerC = F.open("act_c", device: "dev_2", token: "tok-c2", at: 10)
            newerC.updatedAt = F.now.addingTimeInterval(10)
            cache.put(newerC)
            // Replaced, another device: moves.
            cache.put(F.open("act_b", device: "dev_3", token: "tok-b2"))
            // Dropped.
            cache.put(F.closed("act_a", device: "dev_1"))

            #expect(cache.records(deviceId: "dev_1").isEmpty, "buildIndexFirst: \(buildIndexFirst)")
            #expect(cache.openActivityId(deviceId: "dev_1") == nil)
            #expect(cache.records(deviceId: "dev_2") == [newerC, F.open("act_d", device: "dev_2")])
            #expect(cache.openActivityId(deviceId: "dev_2") == "act_c")
            #expect(cache.records(deviceId: "dev_3").map(\.updateToken) == ["tok-b2"])
            #expect(cache.openActivityId(deviceId: "dev_3") == "act_b")
            #expect(cache.records(deviceId: "dev_none").isEmpty)

            // A new activity in the slot act_a left: listed under its own device only.
            cache.put(F.open("act_e", device: "dev_4"))
            #expect(cache.records(deviceId: "dev_1").isEmpty)
            #expect(cache.records(deviceId: "dev_4").map(\.activityId) == ["act_e"])
            #expect(cache.count == 4)
        }
    }

    @Test("a replace that moves an activity to another device and closes it leaves no trace under either device")
    func deviceChangeThatClosesLeavesNoStaleEntry() {
        var cache = ActivityCache(policy: ActivityPolicy())
        cache.put(F.open("act_a", device: "dev_1"))
        cache.put(F.open("act_b", device: "dev_2"))
        #expect(cache.records(deviceId: "dev_1").map(\.activityId) == ["act_a"])  // index built

        // The stored version says another device, and closed.
        cache.put(F.closed("act_a", device: "dev_9"))
        #expect(cache["act_a"] == nil)
        #expect(cache.records(deviceId: "dev_1").isEmpty)
        #expect(cache.records(deviceId: "dev_9").isEmpty)

        // A new activity of a third device takes the freed slot: it must not show up as dev_1's.
        cache.put(F.open("act_c", device: "dev_3"))
        #expect(cache.records(deviceId: "dev_3").map(\.activityId) == ["act_c"])
        #expect(cache.records(deviceId: "dev_1").isEmpty, "dev_1 has no open activity")
        #expect(cache.openActivityId(deviceId: "dev_1") == nil)
    }

    // MARK: When a tick has something to do

    @Test("earliestDue: every change can only lower it; a sweep over every activity or a tick's settle sets it exactly")
    func earliestDueIsALowerBoundMadeExactBySweeps() {
        var cache = ActivityCache(policy: ActivityPolicy(restartAfter: .seconds(1000)))
        cache.put(F.open("act_a", device: "dev_1", at: 0))    // restarts at +1000
        cache.put(F.open("act_b", device: "dev_2", at: 100))  // restarts at +1100
        #expect(cache.earliestDue == F.now.addingTimeInterval(1000))
        #expect(cache.hasNothingDue(at: F.now.addingTimeInterval(999), feedIsFresh: true, matchIsLive: true))
        #expect(!cache.hasNothingDue(at: F.now.addingTimeInterval(1000), feedIsFresh: true, matchIsLive: true))

        // A change that moves act_a's deadline later leaves the bound where it was: still a lower bound.
        cache.put(F.open("act_a", device: "dev_1", at: 500))
        #expect(cache.earliestDue == F.now.addingTimeInterval(1000))

        // Every activity changed in turn: the bound is exact again (act_b's now).
        cache.beginSweep()
        for slot in cache.orderedSlots() { cache.update(at: slot) { _ in } }
        cache.endSweep()
        #expect(cache.earliestDue == F.now.addingTimeInterval(1100))

        // A tick that walked them while the feed was stale: nothing due until the feed answers again.
        cache.settle(due: nil, feedIsFresh: false)
        #expect(cache.hasNothingDue(at: F.now.addingTimeInterval(5000), feedIsFresh: false, matchIsLive: true))
        #expect(!cache.hasNothingDue(at: F.now.addingTimeInterval(5000), feedIsFresh: true, matchIsLive: true))
        cache.settle(due: nil, feedIsFresh: true)
        #expect(cache.hasNothingDue(at: F.now.addingTimeInterval(5000), feedIsFresh: true, matchIsLive: true))
    }

    @Test("a waiting activity keeps its match walked while the match is live; an empty cache is always walked")
    func waitingActivitiesAndEmptyCaches() throws {
        var cache = ActivityCache(policy: ActivityPolicy())
        #expect(!cache.hasNothingDue(at: F.now, feedIsFresh: true, matchIsLive: false), "walked, to be forgotten")

        let waiting = ActivityRecord(
            deviceId: "dev_1", environment: .production,
            lifecycle: ActivityLifecycle(activityId: "act_w", matchId: F.matchId), updatedAt: F.now)
        cache.put(waiting)
        #expect(cache.waitingCount == 1)
        #expect(cache.earliestDue == nil)
        #expect(!cache.hasNothingDue(at: F.now, feedIsFresh: true, matchIsLive: true))
        #expect(cache.hasNothingDue(at: F.now, feedIsFresh: true, matchIsLive: false))

        // Adopted by the app: no longer waiting.
        let slot = try #require(cache.slot(id: "act_w"))
        cache.update(at: slot) { record in
            record.lifecycle = .adopted(activityId: "act_w", matchId: F.matchId, updateToken: "tok", now: F.now)
        }
        #expect(cache.waitingCount == 0)
        #expect(cache.hasNothingDue(at: F.now, feedIsFresh: true, matchIsLive: true))

        // Waiting again, then closed by a replace: counted in, then out.
        cache.put(waiting)
        #expect(cache.waitingCount == 1)
        cache.put(F.closed(waiting))
        #expect(cache.waitingCount == 0)
        #expect(cache.isEmpty)
    }
}
