import Foundation
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

@Suite("Store contract: activities")
struct ActivityContractTests {
    @Test(arguments: StoreKind.allCases)
    func savedActivitiesReadBackSorted(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            let records = [
                F.activity("act-3", device: "dev-a", match: "m1", token: "upd-3"),
                F.activity("act-1", device: "dev-b", match: "m1", environment: .sandbox),
                F.activity("act-2", device: "dev-a", match: "m2", token: "upd-2"),
            ]
            for record in records { try await store.saveActivity(record) }

            #expect(try await store.activity(id: "act-1") == records[1])
            #expect(try await store.activity(id: "act-9") == nil)
            #expect(try await store.activities(matchId: "m1").map(\.activityId) == ["act-1", "act-3"])
            #expect(try await store.activities(deviceId: "dev-a").map(\.activityId) == ["act-2", "act-3"])
            #expect(try await store.activities(matchId: "m9").isEmpty)
            #expect(try await store.activity(updateToken: "upd-2") == records[2])
            #expect(try await store.activity(updateToken: "upd-9") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func savingAgainReplaces(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-1", at: 1))
            var record = try #require(try await store.activity(id: "act-1"))
            #expect(record.phase == .waiting)
            #expect(record.updateToken == nil)

            _ = record.lifecycle.updateTokenRegistered("upd-1", now: F.at(2), policy: F.policy)
            record.updatedAt = F.at(2)
            try await store.saveActivity(record)

            let saved = try #require(try await store.activity(id: "act-1"))
            #expect(saved == record)
            #expect(saved.phase == .active)
            #expect(saved.updateToken == "upd-1")
            #expect(try await store.activity(updateToken: "upd-1")?.activityId == "act-1")
            #expect(try await store.activities(deviceId: "dev-a").count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anUpdateTokenBelongsToOneOpenActivity(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-x", token: "upd-t", at: 1))
            // The same activity may be saved again with its own token.
            try await store.saveActivity(F.activity("act-x", token: "upd-t", at: 2))

            await #expect(throws: StoreError.conflict) { try await store.saveActivity(F.activity("act-y", token: "upd-t")) }
            #expect(try await store.activity(id: "act-y") == nil)
            #expect(try await store.activity(updateToken: "upd-t")?.activityId == "act-x")

            // Once the holder has ended, the token is free; the open holder wins a lookup.
            try await store.saveActivity(F.activity("act-x", token: "upd-t", ended: true, at: 3))
            try await store.saveActivity(F.activity("act-y", token: "upd-t", at: 4))
            #expect(try await store.activity(updateToken: "upd-t")?.activityId == "act-y")
            // An ended activity holds nothing, so recording one with the token is no conflict.
            try await store.saveActivity(F.activity("act-z", token: "upd-t", ended: true, at: 5))
            #expect(try await store.activity(updateToken: "upd-t")?.activityId == "act-y")
            // But reopening the ended one while act-y holds the token is.
            await #expect(throws: StoreError.conflict) { try await store.saveActivity(F.activity("act-x", token: "upd-t", at: 6)) }
            #expect(try await store.activity(id: "act-x")?.phase == .ended)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func lookupByTokenAmongEndedActivitiesTakesTheNewest(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-1", token: "upd-t", ended: true, at: 1))
            try await store.saveActivity(F.activity("act-2", token: "upd-t", ended: true, at: 9))
            try await store.saveActivity(F.activity("act-3", token: "upd-t", ended: true, at: 5))
            #expect(try await store.activity(updateToken: "upd-t")?.activityId == "act-2")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func openHoldersOfManyTokensInOneRead(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            try await store.saveActivities([
                F.activity("act-1", device: "dev-a", token: "upd-1"),
                F.activity("act-2", device: "dev-b", match: "m2", token: "upd-2"),
                F.activity("act-3", device: "dev-a", token: "upd-3", ended: true),
                F.activity("act-4", device: "dev-b", token: "upd-1", ended: true),
            ])
            let holders = try await store.openHolders(updateTokens: ["upd-1", "upd-2", "upd-3", "upd-9", "upd-1"])
            #expect(holders == ["upd-1": "act-1", "upd-2": "act-2"], "ended holders and unknown tokens are left out")
            #expect(try await store.openHolders(updateTokens: []).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func openActivitiesLeaveOutEndedOnes(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            let starting = ActivityRecord(
                deviceId: "dev-b", environment: .production, lifecycle: try F.startingLifecycle("act-4"), updatedAt: F.at(0))
            #expect(starting.phase == .starting)
            try await store.saveActivities([
                F.activity("act-5", device: "dev-a", token: "upd-5", ended: true),
                F.activity("act-3", device: "dev-a", token: "upd-3"),
                starting,
                F.activity("act-1", device: "dev-b"),
            ])
            let open = try await store.openActivities()
            #expect(open.map(\.activityId) == ["act-1", "act-3", "act-4"])
            #expect(open.map(\.phase) == [.waiting, .active, .starting])
            #expect(try await store.activity(id: "act-5")?.phase == .ended)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deletingAnActivity(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-1", token: "upd-1"))
            #expect(try await store.deleteActivity(id: "act-1"))
            #expect(try await store.deleteActivity(id: "act-1") == false)
            #expect(try await store.activity(id: "act-1") == nil)
            #expect(try await store.activity(updateToken: "upd-1") == nil)
            // Its token is free for another activity.
            try await store.saveActivity(F.activity("act-2", token: "upd-1"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aBatchIsSavedWholeOrNotAtAll(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-0", token: "upd-held"))
            let batch = (1...50).map { F.activity("act-\($0)", token: "upd-\($0)") }
            try await store.saveActivities(batch)
            #expect(try await store.openActivities().count == 51)
            try await store.saveActivities([])

            // A conflict anywhere in the batch leaves every record as it was.
            var changed = batch[0]
            changed.updatedAt = F.at(60)
            await #expect(throws: StoreError.conflict) {
                try await store.saveActivities([changed, F.activity("act-new", token: "upd-held")])
            }
            #expect(try await store.activity(id: "act-1") == batch[0])
            #expect(try await store.activity(id: "act-new") == nil)
            // So does a record of an unknown device, or two records claiming one token.
            await #expect(throws: StoreError.notFound) {
                try await store.saveActivities([changed, F.activity("act-new", device: "ghost")])
            }
            await #expect(throws: StoreError.conflict) {
                try await store.saveActivities([F.activity("act-p", token: "upd-dup"), F.activity("act-q", token: "upd-dup")])
            }
            #expect(try await store.activity(id: "act-1") == batch[0])
            #expect(try await store.activity(id: "act-p") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordWithAnEmptyIdIsRefused(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            var record = F.activity("act-1", match: "m1")
            record.deviceId = ""
            await #expect(throws: StoreError.invalid) { try await store.saveActivity(record) }
            record = F.activity("act-1", match: "m1")
            record.lifecycle = ActivityLifecycle(activityId: "", matchId: "m1")
            await #expect(throws: StoreError.invalid) { try await store.saveActivities([record]) }
            record.lifecycle = ActivityLifecycle(activityId: "act-1", matchId: "")
            await #expect(throws: StoreError.invalid) { try await store.saveActivity(record) }
            #expect(try await store.openActivities().isEmpty)
        }
    }

    @Test("a record keeps its ids once, in its lifecycle, and its fields without padding")
    func aRecordIsCompact() {
        let record = F.activity("act-1", match: "m1")
        #expect(record.activityId == "act-1" && record.lifecycle.activityId == "act-1")
        #expect(record.matchId == "m1" && record.lifecycle.matchId == "m1")
        // Three strings, seven words, a duration and the update token's 32 bytes and its tag, then the phase and a
        // flag: what a store and the lifecycle manager's cache each keep per open activity. A field added, or an
        // optional where a stand-in did, shows here.
        #expect(MemoryLayout<CompactToken?>.size == 33)
        #expect(MemoryLayout<ActivityLifecycle>.size == 3 * 16 + 7 * 8 + 16 + 33 + 2)
        #expect(MemoryLayout<ActivityRecord>.stride == 184)
    }

    @Test(arguments: StoreKind.allCases)
    func aDrivenLifecycleRoundTrips(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let lifecycle = try F.drivenLifecycle()
            // The fixture must reach the interesting state: active, a push sent, newer content held.
            #expect(lifecycle.phase == .active)
            #expect(lifecycle.sentContent != nil)
            #expect(lifecycle.held != nil)
            #expect(lifecycle.lastTimestamp > 0)
            let record = ActivityRecord(deviceId: "dev-a", environment: .sandbox, lifecycle: lifecycle, updatedAt: F.at(23))
            try await store.saveActivity(record)

            let restored = try #require(try await store.activity(id: "act_1"))
            #expect(restored == record)
            #expect(restored.updateToken == "tok-1")
            // After a restart the restored lifecycle carries on exactly as the original would.
            var original = lifecycle
            var resumed = restored.lifecycle
            let deadline = try #require(original.nextDeadline(policy: F.policy))
            #expect(resumed.nextDeadline(policy: F.policy) == deadline)
            let expected = original.tick(now: deadline, policy: F.policy)
            #expect(!expected.isEmpty)
            #expect(resumed.tick(now: deadline, policy: F.policy) == expected)
            #expect(resumed == original)
        }
    }
}
