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
        let device = try await h.service.registerDevice()
        let never = try await h.service.registerDevice()
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

    @Test("bounded: the devices that keep calling keep their place, the others are read again")
    func theDevicesThatCallStay() async throws {
        // Two generations of two devices each.
        let h = ManagerHarness(deviceSecretCapacity: 4)
        var devices: [DeviceRegistration] = []
        for _ in 0..<5 { devices.append(try await h.service.registerDevice()) }
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
