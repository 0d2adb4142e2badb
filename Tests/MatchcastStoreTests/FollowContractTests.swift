import Foundation
import MatchcastStore
import Testing

private typealias F = StoreFixture

@Suite("Store contract: follows")
struct FollowContractTests {
    @Test(arguments: StoreKind.allCases)
    func followingIsIdempotent(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            #expect(try await store.addFollow(F.follow("dev-a", "m1", at: 1)))
            #expect(try await store.addFollow(F.follow("dev-a", "m1", at: 2)) == false)
            // The first follow stands, with its own time.
            #expect(try await store.follows(deviceId: "dev-a") == [F.follow("dev-a", "m1", at: 1)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func followsAddedTogetherWithTheirActivities(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            _ = try await store.addFollow(F.follow("dev-a", "m1", at: 1))
            let dates = try await store.addFollows([
                NewFollow(follow: F.follow("dev-a", "m1", at: 5), activity: nil),
                NewFollow(follow: F.follow("dev-b", "m1", at: 5), activity: F.activity("act-b", device: "dev-b", match: "m1")),
            ])
            // A repeat keeps the time it was first made; a new follow has its own.
            #expect(dates == [F.follow("dev-a", "m1", at: 1).createdAt, F.follow("dev-b", "m1", at: 5).createdAt])
            #expect(try await store.followers(matchId: "m1").map(\.deviceId) == ["dev-a", "dev-b"])
            #expect(try await store.activities(deviceId: "dev-b").map(\.activityId) == ["act-b"])

            // A follow whose device is gone is refused (its activity with it), and the others of the call are not saved.
            await #expect(throws: StoreError.notFound) {
                _ = try await store.addFollows([
                    NewFollow(follow: F.follow("dev-a", "m2"), activity: F.activity("act-a2", device: "dev-a", match: "m2")),
                    NewFollow(follow: F.follow("ghost", "m2"), activity: F.activity("act-g", device: "ghost", match: "m2")),
                ])
            }
            #expect(try await store.followers(matchId: "m2").isEmpty)
            #expect(try await store.activity(id: "act-a2") == nil)
            #expect(try await store.addFollows([]).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func listsAreSortedAndDistinct(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-c", "dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            for (device, match) in [("dev-c", "m2"), ("dev-a", "m3"), ("dev-a", "m1"), ("dev-b", "m2"), ("dev-a", "m2")] {
                #expect(try await store.addFollow(F.follow(device, match)))
            }
            #expect(try await store.follows(deviceId: "dev-a").map(\.matchId) == ["m1", "m2", "m3"])
            #expect(try await store.followers(matchId: "m2").map(\.deviceId) == ["dev-a", "dev-b", "dev-c"])
            #expect(try await store.followers(matchId: "m9").isEmpty)
            #expect(try await store.followedMatchIds() == ["m1", "m2", "m3"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func unfollowing(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            _ = try await store.addFollow(F.follow("dev-a", "m1"))
            _ = try await store.addFollow(F.follow("dev-b", "m1"))
            #expect(try await store.isFollowed(matchId: "m1"))
            #expect(try await store.removeFollow(deviceId: "dev-a", matchId: "m1"))
            #expect(try await store.removeFollow(deviceId: "dev-a", matchId: "m1") == false)
            #expect(try await store.followedMatchIds() == ["m1"])
            #expect(try await store.isFollowed(matchId: "m1"))
            #expect(try await store.removeFollow(deviceId: "dev-b", matchId: "m1"))
            #expect(try await store.followedMatchIds().isEmpty)
            #expect(try await store.isFollowed(matchId: "m1") == false)
            #expect(try await store.isFollowed(matchId: "never-followed") == false)
            // Following again is new again.
            #expect(try await store.addFollow(F.follow("dev-a", "m1")))
            #expect(try await store.isFollowed(matchId: "m1"))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentFollowsAllLand(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask { try await store.addFollow(F.follow("dev-a", "m\(index % 20)")) }
                }
                var added = 0
                for try await new in group where new { added += 1 }
                #expect(added == 20)
            }
            #expect(try await store.follows(deviceId: "dev-a").count == 20)
        }
    }
}
