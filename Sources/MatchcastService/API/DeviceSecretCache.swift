import Foundation
import Synchronization

/// The stored secret hashes of devices that registered or called lately, so that a device's calls do not each read
/// the store to authenticate it (a registration remembers the hash it wrote: the device's next call reads nothing).
///
/// What it holds is what the store says: a device's secret never changes and the API deletes no device, so a hash
/// read once stays right. An entry is still read again once it is `maxAge` old, so a device removed behind the API's
/// back (an operator's SQL, another tool) stops being let in within that time on every replica.
///
/// Bounded by two generations of at most half the capacity each: a device found in the older generation moves to the
/// newer, and when the newer is full the older is let go. Devices that keep calling keep their entry; the others age
/// out with no per-entry bookkeeping.
public final class DeviceSecretCache: Sendable {
    private struct Entry {
        let secretHash: String
        let readAt: Date
    }

    private struct Generations {
        var newer: [String: Entry] = [:]
        var older: [String: Entry] = [:]
    }

    /// The default capacity: about 20 MB of ids and hashes when full.
    public static let defaultCapacity = 100_000
    /// How long a hash read from the store is trusted without reading it again, in seconds.
    static let maxAge: TimeInterval = 300

    /// The most devices one generation holds.
    private let generationSize: Int
    private let generations = Mutex(Generations())

    /// `capacity`: the most devices remembered, both generations together.
    init(capacity: Int = defaultCapacity) {
        precondition(capacity >= 2, "a device secret cache holds at least one device per generation")
        generationSize = capacity / 2
    }

    /// The stored secret hash of `deviceId`, when it was read less than `maxAge` before `now`.
    func secretHash(of deviceId: String, at now: Date) -> String? {
        generations.withLock { generations in
            if let entry = generations.newer[deviceId] {
                return now.timeIntervalSince(entry.readAt) < Self.maxAge ? entry.secretHash : nil
            }
            guard let entry = generations.older.removeValue(forKey: deviceId),
                  now.timeIntervalSince(entry.readAt) < Self.maxAge
            else { return nil }
            insert(deviceId, entry, into: &generations)
            return entry.secretHash
        }
    }

    /// Remembers the secret hash the store holds for `deviceId`, read (or written, by its registration) at `now`.
    func remember(_ deviceId: String, secretHash: String, at now: Date) {
        generations.withLock { generations in
            generations.older[deviceId] = nil
            insert(deviceId, Entry(secretHash: secretHash, readAt: now), into: &generations)
        }
    }

    private func insert(_ deviceId: String, _ entry: Entry, into generations: inout Generations) {
        if generations.newer[deviceId] == nil, generations.newer.count >= generationSize {
            generations.older = generations.newer
            generations.newer = [:]
            generations.newer.reserveCapacity(generationSize)
        }
        generations.newer[deviceId] = entry
    }
}
