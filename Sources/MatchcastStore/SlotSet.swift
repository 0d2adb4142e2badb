/// The slots an index keeps under one key: nearly always one (a device's activity, a token's ended holder), held
/// inline then; a set only beyond. A million one-element sets would be a million allocations.
enum SlotSet: Sendable {
    case one(Int)
    case many(Set<Int>)

    /// The slots, in no order.
    var slots: [Int] {
        switch self {
        case .one(let slot): [slot]
        case .many(let slots): Array(slots)
        }
    }

    mutating func insert(_ slot: Int) {
        switch self {
        case .one(let present) where present == slot: return
        case .one(let present): self = .many([present, slot])
        case .many(var slots):
            self = .one(slot)  // lets go of the set's storage, so the insert below does not copy it
            slots.insert(slot)
            self = .many(slots)
        }
    }

    /// Removes the slot; false when none is left.
    mutating func remove(_ slot: Int) -> Bool {
        switch self {
        case .one(let present): return present != slot
        case .many(var slots):
            self = .one(slot)
            slots.remove(slot)
            if slots.count == 1, let last = slots.first { self = .one(last) } else { self = .many(slots) }
            return true
        }
    }
}

extension Dictionary where Value == SlotSet {
    /// Adds the slot under the key.
    mutating func insert(_ slot: Int, under key: Key) {
        if let position = index(forKey: key) { values[position].insert(slot) } else { self[key] = .one(slot) }
    }

    /// Removes the slot from the key's set, and the key once its set is empty.
    mutating func remove(_ slot: Int, under key: Key) {
        guard let position = index(forKey: key) else { return }
        if !values[position].remove(slot) { remove(at: position) }
    }
}
