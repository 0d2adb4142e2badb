import Foundation
import Synchronization

/// The stored secret hashes of devices that called lately, so that a device's calls do not each read the store to
/// authenticate it.
///
/// What it holds is what the store says: a device's secret never changes and the API deletes no device, so a hash
/// read once stays right. An entry is still read again once it is `maxAge` old, so a device removed behind the API's
/// back (an operator's SQL, another tool) stops being let in within that time on every replica.
///
/// Bounded by two generations of at most `capacity / 2` devices each: a device found in the older generation moves
/// to the newer, and when the newer is full the older is let go. Devices that keep calling keep their entry; the
/// others age out with no per-entry bookkeeping.
public final class DeviceSecretCache: Sendable {
    private struct Entry {
        let secretHash: String
        let readAt: Date
    }

    private struct Generations {
        var newer: [String: Entry] = [:]
        var older: [String: Entry] = [:]
    }

    /// Devices remembered at most (both generations together).
    let capacity: Int
    /// How long a hash read from the store is trusted without reading it again.
    let maxAge: TimeInterval
    private let generations = Mutex(Generations())

    /// The default `capacity`: about 20 MB of ids and hashes when full.
    public static let defaultCapacity = 100_000
    /// The default `maxAge`.
    static let defaultMaxAge: TimeInterval = 300

    init(capacity: Int = defaultCapacity, maxAge: TimeInterval = defaultMaxAge) {
        precondition(capacity >= 2, "a device secret cache holds at least one device per generation")
        self.capacity = capacity
        self.maxAge = maxAge
    }

    /// The stored secret hash of `deviceId`, when it was read less than `maxAge` before `now`.
    func secretHash(of deviceId: String, at now: Date) -> String? {
        generations.withLock { generations in
            if let entry = generations.newer[deviceId] {
                return now.timeIntervalSince(entry.readAt) < maxAge ? entry.secretHash : nil
            }
            guard let entry = generations.older.removeValue(forKey: deviceId),
                  now.timeIntervalSince(entry.readAt) < maxAge
            else { return nil }
            Self.insert(deviceId, entry, into: &generations, half: capacity / 2)
            return entry.secretHash
        }
    }

    /// Remembers the secret hash the store holds for `deviceId`, read at `now`.
    func remember(_ deviceId: String, secretHash: String, at now: Date) {
        generations.withLock { generations in
            generations.older[deviceId] = nil
            Self.insert(deviceId, Entry(secretHash: secretHash, readAt: now), into: &generations, half: capacity / 2)
        }
    }

    private static func insert(_ deviceId: String, _ entry: Entry, into generations: inout Generations, half: Int) {
        if generations.newer[deviceId] == nil, generations.newer.count >= half {
            generations.older = generations.newer
            generations.newer = [:]
            generations.newer.reserveCapacity(half)
        }
        generations.newer[deviceId] = entry
    }
}
