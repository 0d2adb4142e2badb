import Foundation
import MatchcastCore

/// The devices of `InMemoryStore` with what each holds (its push-to-start token and its follows), in a `SlotTable`.
///
/// A million devices in four dictionaries of their own (device, token, follows, follows' index) cost four hash tables
/// of a million entries each, a table's buckets a power of two in size, and per device a small dictionary of its
/// follows; here there is one table (id → slot) and per device one entry in an array. What every record of a device
/// repeats (its id) is kept once: a token or a follow is stored without it and given the device's own id string when
/// read, so the strings of requests that named the device are not kept.
struct DeviceTable: Sendable {
    /// A follow as kept beside its device.
    struct Follow: Sendable {
        var matchId: String
        var createdAt: Date
    }

    /// A push-to-start token as kept beside its device: the token's 32 bytes, when it is an APNs token's 64 hex
    /// digits (`CompactToken`).
    struct Token: Sendable {
        var kept: CompactToken
        var environment: APNsEnvironment
        var updatedAt: Date

        init(token: String, environment: APNsEnvironment, updatedAt: Date) {
            kept = CompactToken(token)
            self.environment = environment
            self.updatedAt = updatedAt
        }

        /// The token's text, made on each read.
        var token: String { kept.string }
    }

    /// When an update token of the device was first reported (`UpdateTokenSighting`).
    struct Sighting: Sendable {
        var token: String
        var firstSeenAt: Date
    }

    struct Entry: SlotKeyed {
        let id: String
        /// The device's `DeviceRecord.secretHash` (64 hex digits, kept in their 32 bytes).
        var secretHash: CompactToken
        var createdAt: Date
        var token: Token?
        /// Its update tokens' first sightings, oldest first: an array beside the device (empty costs nothing), not a
        /// table of its own.
        var sightings: [Sighting] = []
        /// The device's follows, in no order: the first inline (most devices follow one match), the rest beside it.
        var firstFollow: Follow?
        var moreFollows: [Follow] = []

        init(record: DeviceRecord) {
            id = record.id
            secretHash = CompactToken(record.secretHash)
            createdAt = record.createdAt
        }

        /// The device as registered.
        var record: DeviceRecord { DeviceRecord(id: id, secretHash: secretHash.string, createdAt: createdAt) }

        var slotKey: String { id }

        static func value(at slot: Int, of values: borrowing Span<Entry?>, hasKey key: String) -> Bool {
            values[slot]?.id == key
        }

        /// The device's follow of the match, as a record.
        func follow(matchId: String) -> FollowRecord? {
            if let first = firstFollow, first.matchId == matchId { return followRecord(first) }
            return moreFollows.first { $0.matchId == matchId }.map(followRecord)
        }

        var follows: [FollowRecord] {
            guard let firstFollow else { return [] }
            return [followRecord(firstFollow)] + moreFollows.map(followRecord)
        }

        var tokenRecord: PushToStartTokenRecord? {
            token.map {
                PushToStartTokenRecord(deviceId: id, token: $0.token, environment: $0.environment, updatedAt: $0.updatedAt)
            }
        }

        private func followRecord(_ follow: Follow) -> FollowRecord {
            FollowRecord(deviceId: id, matchId: follow.matchId, createdAt: follow.createdAt)
        }

        /// False when the device did not follow the match.
        mutating func removeFollow(matchId: String) -> Bool {
            if let first = firstFollow, first.matchId == matchId {
                firstFollow = moreFollows.popLast()
                return true
            }
            guard let position = moreFollows.firstIndex(where: { $0.matchId == matchId }) else { return false }
            moreFollows.remove(at: position)
            return true
        }

        mutating func addFollow(_ follow: Follow) {
            if firstFollow == nil { firstFollow = follow } else { moreFollows.append(follow) }
        }
    }

    private var table = SlotTable<Entry>()
    /// Push-to-start token → the device holding it (one at most: `setToken` is the only way a token changes).
    private var tokenIndex = SlotIndex()

    var count: Int { table.count }

    func slot(id: String) -> Int? { table.slot(id: id) }

    func contains(id: String) -> Bool { table.slot(id: id) != nil }

    subscript(slot: Int) -> Entry? {
        _read { yield table[slot] }
    }

    /// Adds a device whose id is not here yet; returns its slot.
    @discardableResult
    mutating func add(_ record: DeviceRecord) -> Int {
        table.add(Entry(record: record))
    }

    /// Changes the device in `slot` in place; not its token (`setToken`).
    mutating func update<R>(at slot: Int, _ body: (inout Entry) -> R) -> R {
        table.update(at: slot) { entry in
            let token = entry.token?.kept
            defer { assert(entry.token?.kept == token, "a device's token changes through setToken") }
            return body(&entry)
        }
    }

    /// The slot of the device holding this push-to-start token.
    func slot(token: String) -> Int? {
        let kept = CompactToken(token)
        return tokenIndex.first(hash: token.hashValue) { table[$0]?.token?.kept == kept }
    }

    /// Gives the device in `slot` this push-to-start token (nil: none); returns the token it held. The caller takes
    /// the token from any other device holding it first.
    @discardableResult
    mutating func setToken(_ token: Token?, at slot: Int) -> String? {
        let previous = table[slot]?.token?.token
        if let previous { tokenIndex.remove(slot, hash: previous.hashValue) }
        table.update(at: slot) { $0.token = token }
        if let token { tokenIndex.insert(slot, hash: token.token.hashValue) }
        return previous
    }

    /// Removes the device; returns what it held.
    mutating func remove(id: String) -> Entry? {
        guard let slot = table.slot(id: id) else { return nil }
        if let token = table[slot]?.token?.token { tokenIndex.remove(slot, hash: token.hashValue) }
        return table.remove(at: slot)
    }
}
