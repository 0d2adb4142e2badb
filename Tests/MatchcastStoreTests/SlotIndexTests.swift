import Testing
@testable import MatchcastStore

/// `SlotIndex` against a plain dictionary of sets, through inserts and removals that grow it, fill it with
/// tombstones and make keys collide.
@Suite("SlotIndex: slots found by their keys' hashes")
struct SlotIndexTests {
    /// Keys as the index's users keep them: in the slots' own values.
    struct Keyed {
        var index = SlotIndex()
        var keys: [String?] = []
        var hash: (String) -> Int = { $0.hashValue }

        func slots(_ key: String) -> Set<Int> {
            var found: Set<Int> = []
            index.forEach(hash: hash(key)) { slot in
                if keys[slot] == key { found.insert(slot) }
                return true
            }
            return found
        }

        func first(_ key: String) -> Int? { index.first(hash: hash(key)) { keys[$0] == key } }

        mutating func add(_ key: String) -> Int {
            keys.append(key)
            index.insert(keys.count - 1, hash: hash(key))
            return keys.count - 1
        }

        mutating func remove(_ slot: Int) -> Bool {
            guard let key = keys[slot] else { return false }
            keys[slot] = nil
            return index.remove(slot, hash: hash(key))
        }
    }

    @Test("a key finds its slot; an absent key finds none")
    func finds() {
        var keyed = Keyed()
        let a = keyed.add("dev_a")
        let b = keyed.add("dev_b")
        #expect(keyed.first("dev_a") == a)
        #expect(keyed.first("dev_b") == b)
        #expect(keyed.first("dev_c") == nil)
        #expect(keyed.index.count == 2)
        #expect(Set(keyed.index.slots) == [a, b])
    }

    @Test("a key under several slots finds them all, and loses only the one removed")
    func several() {
        var keyed = Keyed()
        let slots = (0..<5).map { _ in keyed.add("dev_shared") }
        let other = keyed.add("dev_other")
        #expect(keyed.slots("dev_shared") == Set(slots))
        let removed = keyed.remove(slots[2])
        #expect(removed)
        #expect(keyed.slots("dev_shared") == Set(slots).subtracting([slots[2]]))
        #expect(keyed.first("dev_other") == other)
    }

    @Test("removing a slot that is not there says so")
    func removeAbsent() {
        var index = SlotIndex()
        let fromEmpty = index.remove(3, hash: 42)
        index.insert(3, hash: 42)
        let otherSlot = index.remove(4, hash: 42)
        let otherHash = index.remove(3, hash: 43)
        let present = index.remove(3, hash: 42)
        #expect(!fromEmpty && !otherSlot && !otherHash && present)
        #expect(index.count == 0)
    }

    @Test("keys whose hashes collide are told apart by the values", arguments: [1, 7])
    func collisions(buckets: Int) {
        // Every key hashes into `buckets` values: long probe chains, with removals in their middle.
        var keyed = Keyed(hash: { key in key.utf8.reduce(0) { $0 &+ Int($1) } % buckets })
        let keys = (0..<200).map { "key-\($0)" }
        var slotOf: [String: Int] = [:]
        for key in keys { slotOf[key] = keyed.add(key) }
        for (number, key) in keys.enumerated() where number % 3 == 0 {
            let removed = keyed.remove(slotOf[key]!)
            #expect(removed)
        }
        for (number, key) in keys.enumerated() {
            #expect(keyed.first(key) == (number % 3 == 0 ? nil : slotOf[key]), "\(key)")
        }
    }

    @Test("random inserts and removals agree with a dictionary, through growth and tombstones")
    func agreesWithDictionary() {
        var generator = SystemRandomNumberGenerator()
        var keyed = Keyed()
        var expected: [String: Set<Int>] = [:]
        var live: [Int] = []
        for step in 0..<20_000 {
            if live.isEmpty || Int.random(in: 0..<10, using: &generator) < 6 {
                // Few distinct keys: some keys are under several slots at once.
                let key = "k\(Int.random(in: 0..<3_000, using: &generator))"
                let slot = keyed.add(key)
                expected[key, default: []].insert(slot)
                live.append(slot)
            } else {
                let slot = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
                let key = keyed.keys[slot]!
                let removed = keyed.remove(slot)
                #expect(removed)
                expected[key]?.remove(slot)
            }
            if step % 997 == 0 {
                for (key, slots) in expected { #expect(keyed.slots(key) == slots, "\(key) at step \(step)") }
            }
        }
        #expect(keyed.index.count == live.count)
        #expect(Set(keyed.index.slots) == Set(live))
        for (key, slots) in expected { #expect(keyed.slots(key) == slots) }
        // Emptied, then filled again: still right.
        for slot in live {
            let removed = keyed.remove(slot)
            #expect(removed)
        }
        #expect(keyed.index.count == 0)
        let again = keyed.add("k1")
        #expect(keyed.slots("k1") == [again])
    }
}
