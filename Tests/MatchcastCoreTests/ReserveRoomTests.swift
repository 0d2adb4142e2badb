import MatchcastCore
import Testing

@Suite("Array.reserveRoom: room for a batch, grown as append grows")
struct ReserveRoomTests {
    @Test("a queue fed 10,000 batches reallocates a few dozen times, not once per batch")
    func batchesGrowGeometrically() {
        var queue: [Int] = []
        var reallocations = 0
        for batch in 0..<10_000 {
            let before = queue.capacity
            queue.reserveRoom(for: 100)
            if queue.capacity != before { reallocations += 1 }
            #expect(queue.capacity >= queue.count + 100)
            queue.append(contentsOf: repeatElement(batch, count: 100))
        }
        #expect(queue.count == 1_000_000)
        // Doubling from 100 to a million: about 14 reallocations. reserveCapacity(count + 100) would make 10,000.
        #expect(reallocations <= 30, "reallocated \(reallocations) times")
    }

    @Test("room already there allocates nothing; more than double is given as asked")
    func enoughRoomIsKept() {
        var array: [Int] = []
        array.reserveCapacity(64)
        let capacity = array.capacity
        array.reserveRoom(for: 64)
        #expect(array.capacity == capacity)
        array.reserveRoom(for: 10_000)
        #expect(array.capacity >= 10_000)
    }
}
