/// Values in numbered slots, found by id through one index; a removed value's slot is reused by the next one added.
/// A walk or a change reaches a value by its slot, in place: no hashing, no copy out and back. What
/// `ActivitySlots` (activities) and the memory store's `DeviceTable` (devices) keep their records in.
public struct SlotTable<Value: Sendable>: Sendable {
    @usableFromInline var values: [Value?] = []
    private var freeSlots: [Int] = []
    private var slotById: [String: Int] = [:]

    public init() {}

    /// The values held.
    public var count: Int { slotById.count }
    public var isEmpty: Bool { slotById.isEmpty }

    /// One past the highest slot ever used: a bound for arrays indexed by slot.
    public var capacity: Int { values.count }

    /// Every value, in no order.
    public var all: some Sequence<Value> { values.lazy.compactMap { $0 } }

    /// Every id with its slot, in no order.
    public var slotsById: [String: Int] { slotById }

    public func slot(id: String) -> Int? { slotById[id] }

    /// The value in `slot` (nil when the slot is free), read in place.
    @inlinable
    public subscript(slot: Int) -> Value? {
        _read { yield values.span[slot] }
    }

    /// Adds a value under an id not held yet; returns its slot.
    @discardableResult
    public mutating func add(_ value: Value, id: String) -> Int {
        precondition(slotById[id] == nil, "'\(id)' already has a slot")
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            values[slot] = value
        } else {
            slot = values.count
            values.append(value)
        }
        slotById[id] = slot
        return slot
    }

    /// Changes the value in `slot` (which must hold one) in place. Its id must not change.
    @inlinable
    public mutating func update<R>(at slot: Int, _ body: (inout Value) -> R) -> R {
        body(&values[slot]!)
    }

    /// Removes the value held under `id`; returns it.
    @discardableResult
    public mutating func remove(id: String) -> Value? {
        guard let slot = slotById.removeValue(forKey: id), let value = values[slot] else { return nil }
        values[slot] = nil
        freeSlots.append(slot)
        return value
    }
}
