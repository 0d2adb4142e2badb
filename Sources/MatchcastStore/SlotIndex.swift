/// An index from a key to slot numbers, for keys the slots' own values hold (an id, a token): it keeps the slots and
/// 32 bits of each key's hash, never the keys themselves, and the caller says whether a slot's value has the key.
///
/// A `Dictionary<String, Int>` of a million entries keeps two million 24-byte buckets (48 MB) and a retained
/// reference to every key; this keeps two million 8-byte ones (16 MB). Open addressing with linear probing: a bucket
/// is 0 (empty), `tombstone` (removed), or the hash's low 32 bits above the slot number plus one. The stored hash bits
/// settle most probes without reading a slot's value, and let the table grow without hashing any key again.
///
/// A key may map to several slots (`forEach(hash:_:)` visits them all): the caller decides what a key means.
public struct SlotIndex: Sendable {
    private var buckets: [UInt64] = []
    /// Slots held.
    public private(set) var count = 0
    /// Removed buckets still in probe chains.
    private var tombstones = 0

    private static let tombstone = UInt64.max
    private static let slotMask: UInt64 = 0xFFFF_FFFF

    public init() {}

    /// The first slot under `hash` for which `matches` holds (probe order, not insertion order).
    public func first(hash: Int, where matches: (Int) -> Bool) -> Int? {
        var found: Int?
        forEach(hash: hash) { slot in
            if matches(slot) { found = slot; return false }
            return true
        }
        return found
    }

    /// Visits every slot under `hash` (and, rarely, slots of other keys whose hash shares the stored bits), until
    /// `body` returns false.
    public func forEach(hash: Int, _ body: (Int) -> Bool) {
        guard !buckets.isEmpty else { return }
        let tag = Self.tag(hash)
        let mask = buckets.count - 1
        var position = Int(truncatingIfNeeded: tag) & mask
        while true {
            let bucket = buckets[position]
            if bucket == 0 { return }
            if bucket != Self.tombstone, bucket >> 32 == tag {
                guard body(Int(bucket & Self.slotMask) - 1) else { return }
            }
            position = (position + 1) & mask
        }
    }

    /// Adds `slot` under `hash`. The caller removes an entry it replaces first: the index keeps whatever it is given.
    public mutating func insert(_ slot: Int, hash: Int) {
        precondition(slot >= 0 && slot < Int(Self.slotMask - 1), "slot \(slot) out of the index's range")
        if (count + tombstones + 1) * 4 > buckets.count * 3 { resize(for: count + 1) }
        let tag = Self.tag(hash)
        let mask = buckets.count - 1
        var position = Int(truncatingIfNeeded: tag) & mask
        while buckets[position] != 0 && buckets[position] != Self.tombstone { position = (position + 1) & mask }
        if buckets[position] == Self.tombstone { tombstones -= 1 }
        buckets[position] = tag << 32 | UInt64(slot + 1)
        count += 1
    }

    /// Removes `slot` from under `hash`; false when it was not there.
    @discardableResult
    public mutating func remove(_ slot: Int, hash: Int) -> Bool {
        guard !buckets.isEmpty else { return false }
        let entry = Self.tag(hash) << 32 | UInt64(slot + 1)
        let mask = buckets.count - 1
        var position = Int(truncatingIfNeeded: Self.tag(hash)) & mask
        while buckets[position] != 0 {
            if buckets[position] == entry {
                // The end of a probe chain can be emptied outright; a bucket inside one must stay a tombstone.
                if buckets[(position + 1) & mask] == 0 {
                    buckets[position] = 0
                } else {
                    buckets[position] = Self.tombstone
                    tombstones += 1
                }
                count -= 1
                return true
            }
            position = (position + 1) & mask
        }
        return false
    }

    /// Every slot held, in no order.
    public var slots: [Int] {
        var result: [Int] = []
        result.reserveCapacity(count)
        for bucket in buckets where bucket != 0 && bucket != Self.tombstone { result.append(Int(bucket & Self.slotMask) - 1) }
        return result
    }

    public mutating func removeAll() {
        buckets = []
        count = 0
        tombstones = 0
    }

    // MARK: Internals

    private static func tag(_ hash: Int) -> UInt64 { UInt64(truncatingIfNeeded: hash) & slotMask }

    /// Rebuilds the buckets for `needed` slots at most three quarters full (fewer buckets is never chosen, so a table
    /// emptied and filled again does not shrink and grow each time), dropping the tombstones.
    private mutating func resize(for needed: Int) {
        var capacity = Swift.max(buckets.count, 16)
        while needed * 4 > capacity * 3 { capacity *= 2 }
        // Mostly tombstones: rebuilt at the same size. Mostly live: twice the size, so that rebuilds stay rare.
        if capacity == buckets.count, needed * 2 > capacity { capacity *= 2 }
        let old = buckets
        buckets = Array(repeating: 0, count: capacity)
        tombstones = 0
        let mask = capacity - 1
        for bucket in old where bucket != 0 && bucket != Self.tombstone {
            var position = Int(truncatingIfNeeded: bucket >> 32) & mask
            while buckets[position] != 0 { position = (position + 1) & mask }
            buckets[position] = bucket
        }
    }
}
