import Foundation
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

/// A batch is checked record by record, each against the store as the batch's earlier records leave it (as
/// SQLite's transaction does), and saved whole or not at all; and the reads stay right as records move
/// between matches, devices and tokens (the in-memory store keeps indexes for them).
@Suite("Store contract: activity batches and indexes")
struct ActivityBatchContractTests {
    @Test(arguments: StoreKind.allCases)
    func aTokenFreedInTheBatchCanBeTakenLaterInIt(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivities([F.activity("act-a", token: "upd-1"), F.activity("act-c", token: "upd-3")])

            // Taken before it is freed: a conflict, and nothing of the batch is saved.
            let error = await #expect(throws: StoreError.conflict) {
                try await store.saveActivities([
                    F.activity("act-b", token: "upd-1", at: 1), F.activity("act-a", token: "upd-2", at: 1),
                ])
            }
            #expect(error?.message.contains("held by open activity 'act-a'") == true)
            #expect(try await store.activity(id: "act-b") == nil)
            #expect(try await store.activity(id: "act-a")?.updateToken == "upd-1")
            // An activity already stored moving to a token another open one holds: the same conflict.
            let moving = await #expect(throws: StoreError.conflict) {
                try await store.saveActivities([F.activity("act-c", token: "upd-1", at: 1)])
            }
            #expect(moving?.message.contains("held by open activity 'act-a'") == true)
            #expect(try await store.activity(id: "act-c")?.updateToken == "upd-3")

            // act-a moves to upd-2, act-b takes upd-1, act-c ends and hands upd-3 to act-d.
            try await store.saveActivities([
                F.activity("act-a", token: "upd-2", at: 2), F.activity("act-b", token: "upd-1", at: 2),
                F.activity("act-c", token: "upd-3", ended: true, at: 2), F.activity("act-d", token: "upd-3", at: 2),
            ])
            #expect(try await store.activity(updateToken: "upd-1")?.activityId == "act-b")
            #expect(try await store.activity(updateToken: "upd-2")?.activityId == "act-a")
            #expect(try await store.activity(updateToken: "upd-3")?.activityId == "act-d")
            #expect(try await store.openActivities().map(\.activityId) == ["act-a", "act-b", "act-d"])
            #expect(try await store.census().updateTokens == 3)
        }
    }

    /// Batches saved in the same order again and again (as fan-outs save them; the in-memory store then checks the
    /// slot that came next last time before it looks an id up): with activities removed, added in freed places, left
    /// out and saved out of order, every save still lands on its own activity.
    @Test(arguments: StoreKind.allCases)
    func batchesSavedInARepeatedOrderLandOnTheirOwnActivities(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            func saved(_ ids: [String], at seconds: Int) async throws {
                try await store.saveActivities(ids.map { F.activity($0, token: "upd-\($0)", at: seconds) })
            }
            func updatedAt(_ id: String) async throws -> Date? { try await store.activity(id: id)?.updatedAt }

            try await saved(["act-a", "act-b", "act-c"], at: 1)
            try await saved(["act-a", "act-b", "act-c"], at: 2)
            #expect(try await store.deleteActivity(id: "act-b"))
            try await saved(["act-d"], at: 3)  // in the place act-b had, in the in-memory store
            try await saved(["act-a", "act-d", "act-c"], at: 4)
            try await saved(["act-a", "act-c"], at: 5)
            try await saved(["act-c", "act-a", "act-d"], at: 6)
            try await saved(["act-a"], at: 7)
            try await saved(["act-b"], at: 8)

            #expect(try await updatedAt("act-a") == F.at(7))
            #expect(try await updatedAt("act-b") == F.at(8))
            #expect(try await updatedAt("act-c") == F.at(6))
            #expect(try await updatedAt("act-d") == F.at(6))
            for id in ["act-a", "act-b", "act-c", "act-d"] {
                #expect(try await store.activity(updateToken: "upd-\(id)")?.activityId == id)
                #expect(try await store.activity(id: id)?.updateToken == "upd-\(id)")
            }
            #expect(try await store.openActivities().map(\.activityId) == ["act-a", "act-b", "act-c", "act-d"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theSameActivityTwiceInABatch(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            try await store.saveActivity(F.activity("act-a", token: "upd-1"))

            // The later record wins; the token the earlier one claimed is free again.
            try await store.saveActivities([
                F.activity("act-a", token: "upd-2", at: 1), F.activity("act-a", token: "upd-3", at: 2),
                F.activity("act-n", device: "dev-b", match: "m2", token: "upd-4", at: 3),
                F.activity("act-n", device: "dev-b", match: "m3", at: 4),
                F.activity("act-b", token: "upd-2", at: 5),
            ])
            #expect(try await store.activity(id: "act-a") == F.activity("act-a", token: "upd-3", at: 2))
            #expect(try await store.activity(id: "act-n") == F.activity("act-n", device: "dev-b", match: "m3", at: 4))
            #expect(try await store.activity(updateToken: "upd-2")?.activityId == "act-b")
            #expect(try await store.activity(updateToken: "upd-1") == nil)
            #expect(try await store.activity(updateToken: "upd-4") == nil)
            #expect(try await store.activities(matchId: "m2").isEmpty)
            #expect(try await store.activities(matchId: "m3").map(\.activityId) == ["act-n"])

            // Saved unchanged, then ended, then reopened by another record of the batch: the token it held
            // is taken in between, so the reopening conflicts and the batch is refused.
            let error = await #expect(throws: StoreError.conflict) {
                try await store.saveActivities([
                    F.activity("act-a", token: "upd-3", at: 6), F.activity("act-a", token: "upd-3", ended: true, at: 6),
                    F.activity("act-x", token: "upd-3", at: 6), F.activity("act-a", token: "upd-3", at: 7),
                ])
            }
            #expect(error?.message.contains("held by open activity 'act-x'") == true)
            #expect(try await store.activity(id: "act-a") == F.activity("act-a", token: "upd-3", at: 2))
            #expect(try await store.activity(id: "act-x") == nil)
            // Ended and reopened with its own token, nobody else claiming it: fine.
            try await store.saveActivities([
                F.activity("act-a", token: "upd-3", ended: true, at: 8), F.activity("act-a", token: "upd-3", at: 9),
            ])
            #expect(try await store.activity(updateToken: "upd-3") == F.activity("act-a", token: "upd-3", at: 9))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anUnchangedActivityKeepsItsTokenAgainstTheBatch(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let held = F.activity("act-a", token: "upd-1")
            try await store.saveActivity(held)

            // act-a saved again as it is (only its date moves), another record claims its token: conflict,
            // whichever comes first, and neither is saved.
            for batch in [
                [F.activity("act-a", token: "upd-1", at: 5), F.activity("act-b", token: "upd-1", at: 5)],
                [F.activity("act-b", token: "upd-1", at: 5), F.activity("act-a", token: "upd-1", at: 5)],
            ] {
                await #expect(throws: StoreError.conflict) { try await store.saveActivities(batch) }
                #expect(try await store.activity(id: "act-a") == held)
                #expect(try await store.activity(id: "act-b") == nil)
            }
            // Saved as it is, it is written (the fast path still writes the record).
            try await store.saveActivities([F.activity("act-a", token: "upd-1", at: 6)])
            #expect(try await store.activity(id: "act-a")?.updatedAt == F.at(6))
            // An ended activity saved unchanged stays ended and holds nothing.
            try await store.saveActivities([F.activity("act-a", token: "upd-1", ended: true, at: 7)])
            try await store.saveActivities([F.activity("act-a", token: "upd-1", ended: true, at: 8), F.activity("act-b", token: "upd-1", at: 8)])
            #expect(try await store.activity(updateToken: "upd-1")?.activityId == "act-b")
            #expect(try await store.activity(id: "act-a")?.updatedAt == F.at(8))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anUnknownDeviceAnywhereRefusesTheBatch(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let saved = F.activity("act-a", token: "upd-1")
            try await store.saveActivity(saved)
            let error = await #expect(throws: StoreError.notFound) {
                try await store.saveActivities([
                    F.activity("act-a", token: "upd-1", at: 1), F.activity("act-a", device: "ghost", token: "upd-1", at: 2),
                ])
            }
            #expect(error?.message.contains("no device 'ghost'") == true)
            #expect(try await store.activity(id: "act-a") == saved)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func readsFollowRecordsThatMoveOrGo(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            try await store.saveActivities([
                F.activity("act-1", device: "dev-a", match: "m1", token: "upd-1"),
                F.activity("act-2", device: "dev-a", match: "m1", token: "upd-2", ended: true),
                F.activity("act-3", device: "dev-b", match: "m2", token: "upd-2", ended: true, at: 4),
            ])
            // act-1 moves to dev-b and m2; act-2 is deleted.
            try await store.saveActivity(F.activity("act-1", device: "dev-b", match: "m2", token: "upd-1"))
            #expect(try await store.deleteActivity(id: "act-2"))
            #expect(try await store.activities(matchId: "m1").isEmpty)
            #expect(try await store.activities(matchId: "m2").map(\.activityId) == ["act-1", "act-3"])
            #expect(try await store.activities(deviceId: "dev-a").isEmpty)
            #expect(try await store.activities(deviceId: "dev-b").map(\.activityId) == ["act-1", "act-3"])
            #expect(try await store.activity(updateToken: "upd-2")?.activityId == "act-3")

            // A new activity after a delete (the in-memory store reuses the slot) and a deleted device.
            try await store.saveActivity(F.activity("act-4", device: "dev-a", match: "m1", token: "upd-4"))
            #expect(try await store.activities(matchId: "m1").map(\.activityId) == ["act-4"])
            #expect(try await store.activity(id: "act-2") == nil)
            #expect(try await store.deleteDevice(id: "dev-b"))
            #expect(try await store.activities(matchId: "m2").isEmpty)
            #expect(try await store.activity(updateToken: "upd-1") == nil)
            #expect(try await store.activity(updateToken: "upd-2") == nil)
            #expect(try await store.openActivities().map(\.activityId) == ["act-4"])
            #expect(try await store.census().updateTokens == 1)
            try await store.saveActivity(F.activity("act-5", device: "dev-a", token: "upd-1"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func followersAndFollowedMatchesAfterUnfollowsAndDeletes(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b", "dev-c"] { try await store.createDevice(F.device(id)) }
            for (device, match) in [("dev-a", "m1"), ("dev-b", "m1"), ("dev-b", "m2"), ("dev-c", "m3")] {
                #expect(try await store.addFollow(F.follow(device, match)))
            }
            #expect(try await store.followedMatchIds() == ["m1", "m2", "m3"])
            #expect(try await store.removeFollow(deviceId: "dev-c", matchId: "m3"))
            #expect(try await store.removeFollow(deviceId: "dev-c", matchId: "m3") == false)
            #expect(try await store.followedMatchIds() == ["m1", "m2"])
            #expect(try await store.deleteDevice(id: "dev-b"))
            #expect(try await store.followedMatchIds() == ["m1"])
            #expect(try await store.followers(matchId: "m1").map(\.deviceId) == ["dev-a"])
            #expect(try await store.followers(matchId: "m2").isEmpty)
            #expect(try await store.census().follows == 1)
        }
    }
}
