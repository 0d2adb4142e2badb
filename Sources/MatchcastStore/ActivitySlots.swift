/// Activity records in numbered slots, found by id. A record keeps its slot until it is removed, so indexes can
/// hold slot numbers instead of ids, and a slot can be read and changed in place with no lookup; a freed slot is
/// reused by the next record added. Shared by the in-memory store's activity table and the lifecycle manager's
/// per-match cache.
public struct ActivitySlots: Sendable {
    @usableFromInline var table = SlotTable<ActivityRecord>()

    public init() {}

    public var count: Int { table.count }
    public var isEmpty: Bool { table.isEmpty }

    /// One past the highest slot ever used: an array kept beside the slots needs this many entries.
    public var capacity: Int { table.capacity }

    /// Every slot in use, in slot order.
    public var usedSlots: [Int] { table.usedSlots }

    /// Every record, in no order.
    public var records: some Sequence<ActivityRecord> { table.all }

    /// Every slot in use, in activity-id order (`precedes`). The ids are gathered first, in slot order, so that the
    /// sort compares strings rather than reaching into records.
    public func slotsInIdOrder() -> [Int] {
        var ids: [(id: String, slot: Int)] = []
        ids.reserveCapacity(table.count)
        for slot in 0..<table.capacity {
            if let id = table[slot]?.activityId { ids.append((id, slot)) }
        }
        ids.sort { Self.precedes($0.id, $1.id) }
        return ids.map(\.slot)
    }

    /// Activity-id order: UTF-8 byte order, as the stores' SQL compares ids (a fan-out walks a match's activities in
    /// it; `FanOutShare` ranges are in it). Compared in place where both are stored contiguously (native strings),
    /// through the generic view otherwise.
    public static func precedes(_ id: String, _ other: String) -> Bool {
        let compared = id.utf8.withContiguousStorageIfAvailable { left in
            other.utf8.withContiguousStorageIfAvailable { right -> Bool in
                for index in 0..<min(left.count, right.count) where left[index] != right[index] {
                    return left[index] < right[index]
                }
                return left.count < right.count
            }
        }
        return (compared ?? nil) ?? id.utf8.lexicographicallyPrecedes(other.utf8)
    }

    /// The slot of the record with this id.
    public func slot(id: String) -> Int? { table.slot(id: id) }

    /// The record in `slot`; nil for a free slot. Read in place: `self[slot]?.phase` copies the phase, not the
    /// record (a plain getter would copy the record, a dozen retains, to read one field of it).
    @inlinable
    public subscript(slot: Int) -> ActivityRecord? {
        _read { yield table[slot] }
    }

    /// Adds a record whose id is not here yet; returns its slot.
    @discardableResult
    public mutating func add(_ record: ActivityRecord) -> Int {
        table.add(record)
    }

    /// Changes the record in `slot` in place; its id must stay the same.
    @inlinable
    public mutating func update<R>(at slot: Int, _ body: (inout ActivityRecord) -> R) -> R {
        table.update(at: slot, body)
    }

    /// Frees `slot`; returns the record it held.
    @discardableResult
    public mutating func remove(at slot: Int) -> ActivityRecord? {
        table.remove(at: slot)
    }
}

extension ActivityRecord: SlotKeyed {
    /// An activity's slot is found by its id.
    public var slotKey: String { activityId }

    public static func value(at slot: Int, of values: borrowing Span<ActivityRecord?>, hasKey key: String) -> Bool {
        values[slot]?.lifecycle.activityId == key
    }
}
