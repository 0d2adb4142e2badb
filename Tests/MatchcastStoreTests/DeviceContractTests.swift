import Foundation
import MatchcastStore
import Testing

private typealias F = StoreFixture

@Suite("Store contract: devices and push-to-start tokens")
struct DeviceContractTests {
    @Test(arguments: StoreKind.allCases)
    func createdDeviceReadsBack(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.ping()
            let device = F.device("dev-a", at: 5)
            try await store.createDevice(device)
            #expect(try await store.device(id: "dev-a") == device)
            #expect(try await store.device(id: "dev-z") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deviceIdIsUnique(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a", at: 1))
            await #expect(throws: StoreError.conflict) { try await store.createDevice(F.device("dev-a", at: 2)) }
            #expect(try await store.device(id: "dev-a")?.createdAt == F.at(1))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deletingADeviceTakesItsTokenFollowsAndActivities(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            try await store.setPushToStartToken(F.token("dev-a", "pts-a"))
            try await store.setPushToStartToken(F.token("dev-b", "pts-b"))
            _ = try await store.addFollow(F.follow("dev-a", "m1"))
            _ = try await store.addFollow(F.follow("dev-a", "m2"))
            _ = try await store.addFollow(F.follow("dev-b", "m1"))
            try await store.saveActivity(F.activity("act-a", device: "dev-a", match: "m1", token: "upd-a"))
            try await store.saveActivity(F.activity("act-b", device: "dev-b", match: "m1", token: "upd-b"))

            #expect(try await store.deleteDevice(id: "dev-a"))

            #expect(try await store.device(id: "dev-a") == nil)
            #expect(try await store.pushToStartToken(deviceId: "dev-a") == nil)
            #expect(try await store.removePushToStartToken(token: "pts-a") == nil)
            #expect(try await store.follows(deviceId: "dev-a").isEmpty)
            #expect(try await store.followers(matchId: "m1").map(\.deviceId) == ["dev-b"])
            #expect(try await store.followedMatchIds() == ["m1"])
            #expect(try await store.activity(id: "act-a") == nil)
            #expect(try await store.activity(updateToken: "upd-a") == nil)
            #expect(try await store.activities(deviceId: "dev-a").isEmpty)
            #expect(try await store.openActivities().map(\.activityId) == ["act-b"])
            // The other device is untouched.
            #expect(try await store.pushToStartToken(deviceId: "dev-b")?.token == "pts-b")
            #expect(try await store.deleteDevice(id: "dev-a") == false)
            // The id is free again, with nothing attached.
            try await store.createDevice(F.device("dev-a"))
            #expect(try await store.follows(deviceId: "dev-a").isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func newPushToStartTokenReplacesThePreviousOne(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            #expect(try await store.pushToStartToken(deviceId: "dev-a") == nil)
            try await store.setPushToStartToken(F.token("dev-a", "pts-1", .sandbox, at: 1))
            let rotated = F.token("dev-a", "pts-2", .production, at: 2)
            try await store.setPushToStartToken(rotated)
            #expect(try await store.pushToStartToken(deviceId: "dev-a") == rotated)
            #expect(try await store.removePushToStartToken(token: "pts-1") == nil)
            // Setting the same token again refreshes its environment and time.
            let again = F.token("dev-a", "pts-2", .sandbox, at: 3)
            try await store.setPushToStartToken(again)
            #expect(try await store.pushToStartToken(deviceId: "dev-a") == again)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aPushToStartTokenBelongsToOneDevice(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            for id in ["dev-a", "dev-b"] { try await store.createDevice(F.device(id)) }
            try await store.setPushToStartToken(F.token("dev-a", "pts-shared", at: 1))
            try await store.setPushToStartToken(F.token("dev-b", "pts-shared", at: 2))
            #expect(try await store.pushToStartToken(deviceId: "dev-a") == nil)
            #expect(try await store.pushToStartToken(deviceId: "dev-b")?.updatedAt == F.at(2))

            #expect(try await store.removePushToStartToken(token: "pts-shared") == "dev-b")
            #expect(try await store.pushToStartToken(deviceId: "dev-b") == nil)
            #expect(try await store.removePushToStartToken(token: "pts-shared") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func writesForAnUnknownDeviceAreNotFound(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let refused = await #expect(throws: StoreError.notFound) { try await store.setPushToStartToken(F.token("ghost", "pts")) }
            #expect(refused?.message == "no device 'ghost'")
            // A token another device holds stays with it when an unknown device's claim of it is refused.
            try await store.createDevice(F.device("dev-a"))
            try await store.setPushToStartToken(F.token("dev-a", "pts-held", at: 1))
            await #expect(throws: StoreError.notFound) { try await store.setPushToStartToken(F.token("ghost", "pts-held", at: 2)) }
            #expect(try await store.pushToStartToken(deviceId: "dev-a")?.token == "pts-held")
            #expect(try await store.pushToStartTokenHolder(token: "pts-held") == "dev-a")
            let unfollowed = await #expect(throws: StoreError.notFound) { _ = try await store.addFollow(F.follow("ghost", "m1")) }
            #expect(unfollowed?.message == "no device 'ghost'")
            await #expect(throws: StoreError.notFound) {
                try await store.saveActivity(F.activity("act-1", device: "ghost", token: "upd"))
            }
            let followed = try await store.followedMatchIds()
            #expect(followed.isEmpty)
            let activity = try await store.activity(id: "act-1")
            #expect(activity == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func tokenRefusalsAreKeptPerDeviceNewestFirstAndGoWithTheDevice(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.createDevice(F.device("dev-b"))
            #expect(try await store.tokenRefusals(deviceId: "dev-a").isEmpty)
            let first = TokenRefusal(deviceId: "dev-a", kind: .pushToStart, token: "aa01", reason: "BadDeviceToken", at: F.at(10))
            let second = TokenRefusal(
                deviceId: "dev-a", kind: .update, token: "bb02", activityId: "act-1", reason: "Unregistered", at: F.at(20))
            try await store.recordTokenRefusal(first)
            try await store.recordTokenRefusal(second)
            try await store.recordTokenRefusal(TokenRefusal(deviceId: "dev-b", kind: .pushToStart, token: "cc03", reason: "x", at: F.at(5)))
            #expect(try await store.tokenRefusals(deviceId: "dev-a") == [second, first])
            // A device that is gone records nothing (and the call does not fail).
            try await store.recordTokenRefusal(TokenRefusal(deviceId: "dev-gone", kind: .update, token: "dd04", reason: "x", at: F.at(1)))
            #expect(try await store.tokenRefusals(deviceId: "dev-gone").isEmpty)
            // Only the newest are kept; a long reason is cut.
            for index in 0..<(TokenRefusal.keptPerDevice + 3) {
                try await store.recordTokenRefusal(TokenRefusal(
                    deviceId: "dev-a", kind: .pushToStart, token: "ee\(index)", reason: String(repeating: "r", count: 500),
                    at: F.at(100 + index)))
            }
            let kept = try await store.tokenRefusals(deviceId: "dev-a")
            #expect(kept.count == TokenRefusal.keptPerDevice)
            #expect(kept.first?.token == "ee\(TokenRefusal.keptPerDevice + 2)")
            #expect(kept.allSatisfy { $0.reason.count == TokenRefusal.maxReasonLength })
            #expect(try await store.tokenRefusals(deviceId: "dev-b").map(\.token) == ["cc03"])
            // Deleting the device takes its refusals.
            #expect(try await store.deleteDevice(id: "dev-a"))
            #expect(try await store.tokenRefusals(deviceId: "dev-a").isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateTokenSightingsKeepTheFirstPerDeviceAndGoWithTheDeviceOrAfterAMonth(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.createDevice(F.device("dev-b"))
            #expect(try await store.updateTokenSightings(deviceId: "dev-a").isEmpty)
            let first = UpdateTokenSighting(deviceId: "dev-a", token: "aa01", firstSeenAt: F.at(10))
            // One call: a token seen twice keeps its first sighting; a device that is gone is skipped, not an error.
            try await store.noteUpdateTokens([
                first, UpdateTokenSighting(deviceId: "dev-b", token: "bb01", firstSeenAt: F.at(11)),
                UpdateTokenSighting(deviceId: "dev-gone", token: "cc01", firstSeenAt: F.at(12)),
            ], now: F.at(12))
            try await store.noteUpdateTokens([
                UpdateTokenSighting(deviceId: "dev-a", token: "aa01", firstSeenAt: F.at(50)),
                UpdateTokenSighting(deviceId: "dev-a", token: "aa02", firstSeenAt: F.at(50)),
            ], now: F.at(50))
            #expect(try await store.updateTokenSightings(deviceId: "dev-a") == [
                first, UpdateTokenSighting(deviceId: "dev-a", token: "aa02", firstSeenAt: F.at(50)),
            ])
            #expect(try await store.updateTokenSightings(deviceId: "dev-b").map(\.token) == ["bb01"])
            #expect(try await store.updateTokenSightings(deviceId: "dev-gone").isEmpty)
            // A month on, what is older than the time kept is let go as new sightings are noted.
            let later = F.at(11).addingTimeInterval(TimeInterval(UpdateTokenSighting.keptFor.components.seconds) + 20)
            try await store.noteUpdateTokens([UpdateTokenSighting(deviceId: "dev-a", token: "aa03", firstSeenAt: later)], now: later)
            #expect(try await store.updateTokenSightings(deviceId: "dev-a").map(\.token) == ["aa02", "aa03"])
            // Deleting the device takes its sightings.
            #expect(try await store.deleteDevice(id: "dev-a"))
            #expect(try await store.updateTokenSightings(deviceId: "dev-a").isEmpty)
        }
    }
}
