/// A value kept in a `SlotTable`: it carries the id the table finds it by.
public protocol SlotKeyed: Sendable {
    var slotKey: String { get }

    /// Whether the value in `slot` of `values` has the id `key`, read in place. A lookup asks this of the values its
    /// index points at; reading `slotKey` of an element through the generic table copies the whole value first.
    static func value(at slot: Int, of values: borrowing Span<Self?>, hasKey key: String) -> Bool
}

/// Values in numbered slots, found by id through one index; a removed value's slot is reused by the next one added.
/// A walk or a change reaches a value by its slot, in place: no hashing, no copy out and back. What
/// `ActivitySlots` (activities) and the memory store's `DeviceTable` (devices) keep their records in.
///
/// The index (`SlotIndex`) keeps slot numbers, not ids: a value's id is read from the value itself.
public struct SlotTable<Value: SlotKeyed>: Sendable {
    @usableFromInline var values: [Value?] = []
    private var freeSlots: [Int] = []
    private var index = SlotIndex()

    public init() {}

    /// The values held.
    public var count: Int { index.count }
    public var isEmpty: Bool { index.count == 0 }

    /// One past the highest slot ever used: a bound for arrays indexed by slot.
    public var capacity: Int { values.count }

    /// Every value, in no order.
    public var all: some Sequence<Value> { values.lazy.compactMap { $0 } }

    /// Every slot in use, in slot order.
    public var usedSlots: [Int] { index.slots.sorted() }

    public func slot(id: String) -> Int? { slot(id: id, hash: id.hashValue) }

    private func slot(id: String, hash: Int) -> Int? {
        index.first(hash: hash) { Value.value(at: $0, of: values.span, hasKey: id) }
    }

    /// The value in `slot` (nil when the slot is free), read in place.
    @inlinable
    public subscript(slot: Int) -> Value? {
        _read { yield values.span[slot] }
    }

    /// Adds a value whose id has no slot yet; returns its slot.
    @discardableResult
    public mutating func add(_ value: Value) -> Int {
        let id = value.slotKey
        let hash = id.hashValue
        precondition(slot(id: id, hash: hash) == nil, "'\(id)' already has a slot")
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            values[slot] = value
        } else {
            slot = values.count
            values.append(value)
        }
        index.insert(slot, hash: hash)
        return slot
    }

    /// Changes the value in `slot` in place; its id must stay the same.
    @inlinable
    public mutating func update<R>(at slot: Int, _ body: (inout Value) -> R) -> R {
        body(&values[slot]!)
    }

    /// Frees the slot of the value with this id; returns the value.
    @discardableResult
    public mutating func remove(id: String) -> Value? {
        slot(id: id).flatMap { remove(at: $0) }
    }

    /// Frees `slot`; returns the value it held (nil for a free slot).
    @discardableResult
    public mutating func remove(at slot: Int) -> Value? {
        guard let value = values[slot] else { return nil }
        index.remove(slot, hash: value.slotKey.hashValue)
        values[slot] = nil
        freeSlots.append(slot)
        return value
    }
}
