import Foundation
import MatchcastService
import MatchcastStore
import Testing

/// A device's calls authenticate from the secret hashes read lately, not from a store read each.
///
/// What the cache holds is shown by deleting devices behind the API's back (`MatchcastStore.deleteDevice`, which no
/// API call makes): a device the service read lately is still let in, one it did not read, or read too long ago, is not.
@Suite("Device secrets: read once, trusted for a while, bounded")
struct DeviceSecretCacheTests {
    @Test("after the first call a device is let in without a store read; a wrong secret never; after five minutes the store is read again")
    func readOnceThenTrustedForAWhile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try SQLiteStore(path: folder.appendingPathComponent("m.sqlite").path)
        defer { try? store.close() }
        let h = ManagerHarness(store: store)
        // Registered by another replica on the same store: this one never read either.
        let other = ManagerHarness(store: store)
        let device = try await other.service.registerDevice()
        let never = try await other.service.registerDevice()
        #expect(try await h.service.authenticateDevice(secret: device.deviceSecret) == device.deviceId)

        #expect(try await store.deleteDevice(id: device.deviceId))
        #expect(try await store.deleteDevice(id: never.deviceId))
        h.clock.advance(by: 299)
        #expect(try await h.service.authenticateDevice(secret: device.deviceSecret) == device.deviceId)
        let random = device.deviceSecret.split(separator: ".").last!
        for wrong in [device.deviceId + ".x" + random, device.deviceId + "." + String(random.reversed())] {
            let refused = await #expect(throws: ServiceError.self) { try await h.service.authenticateDevice(secret: wrong) }
            #expect(refused?.code == .unauthorized)
        }
        let unread = await #expect(throws: ServiceError.self) { try await h.service.authenticateDevice(secret: never.deviceSecret) }
        #expect(unread?.code == .unauthorized, "a device deleted before it ever called is read, and not found")

        h.clock.advance(by: 2)
        let stale = await #expect(throws: ServiceError.self) { try await h.service.authenticateDevice(secret: device.deviceSecret) }
        #expect(stale?.code == .unauthorized, "read again after five minutes: gone")
    }

    @Test("a device registered here is known at once: its first call reads nothing, and the hash is trusted five minutes from its registration")
    func registeredHereKnownAtOnce() async throws {
        let h = ManagerHarness()
        let device = try await h.service.registerDevice()
        // Deleted behind the API's back before its first call: let in all the same, from what the registration wrote.
        #expect(try await h.store.deleteDevice(id: device.deviceId))
        h.clock.advance(by: 299)
        #expect(try await h.service.authenticateDevice(secret: device.deviceSecret) == device.deviceId)
        let wrong = await #expect(throws: ServiceError.self) {
            try await h.service.authenticateDevice(secret: device.deviceId + ".not-its-secret")
        }
        #expect(wrong?.code == .unauthorized)
        h.clock.advance(by: 2)
        let stale = await #expect(throws: ServiceError.self) { try await h.service.authenticateDevice(secret: device.deviceSecret) }
        #expect(stale?.code == .unauthorized, "five minutes after its registration the store is read again: gone")
    }

    @Test("bounded: the devices that keep calling keep their place, the others are read again")
    func theDevicesThatCallStay() async throws {
        // Two generations of two devices each; the devices registered by another replica on the same store, so that
        // this one's cache starts empty.
        let h = ManagerHarness(deviceSecretCapacity: 4)
        let other = ManagerHarness(store: h.store)
        var devices: [DeviceRegistration] = []
        for _ in 0..<5 { devices.append(try await other.service.registerDevice()) }
        func call(_ index: Int) async throws -> Bool {
            (try? await h.service.authenticateDevice(secret: devices[index].deviceSecret)) == devices[index].deviceId
        }
        // 0 and 1 fill the newer generation; 2 makes them the older; 0 calls again and moves back to the newer;
        // 3 makes {2, 0} the older, letting 1 go, and 4 joins 3 in the newer.
        for index in [0, 1, 2, 0, 3, 4] { #expect(try await call(index)) }
        for device in devices { #expect(try await h.store.deleteDevice(id: device.deviceId)) }
        #expect(try await !call(1), "the one that stopped calling was let go, and the store no longer has it")
        // The newer generation first (a device found in the older moves to the newer, which may turn it over).
        for index in [3, 4, 0] { #expect(try await call(index), "device \(index) is still known") }
    }
}
