import MatchcastCore
@testable import MatchcastStore
import Testing

/// `OutboxQueue` on its own: the outbox of the in-memory store, with the bookkeeping (holes, a cursor, an id
/// index built on demand, compaction) that the contract suite's small queues never reach.
@Suite("OutboxQueue")
struct OutboxQueueTests {
    private static let templates = Dictionary(uniqueKeysWithValues: ActivityEvent.allCases.map {
        ($0, Outbox.delivery("template", activity: "template", $0))
    })

    private static func delivery(_ id: String, _ activity: String, _ event: ActivityEvent = .update) -> Delivery {
        var delivery = templates[event]!
        delivery.id = id
        delivery.activityId = activity
        return delivery
    }

    private static func fanOut(_ update: Int, activities: Int, event: ActivityEvent = .update) -> [Delivery] {
        (0..<activities).map { delivery("dlv-\(update)-\($0)", "act-\($0)", event) }
    }

    @Test func removedInQueueOrderItEmptiesAndStartsAfresh() {
        var queue = OutboxQueue()
        for update in 1...3 {
            let sent = Self.fanOut(update, activities: 3000)
            queue.enqueue(sent)
            #expect(queue.count == 3000)
            #expect(queue.queued(limit: 2) == Array(sent.prefix(2)))
            // Removed in batches, in the order queued, as the relay forgets what it handed to the sinks.
            for start in stride(from: 0, to: sent.count, by: 700) {
                queue.remove(ids: sent[start..<min(start + 700, sent.count)].map(\.id))
                #expect(queue.count == sent.count - min(start + 700, sent.count))
                #expect(queue.queued(limit: 1).first?.id == (start + 700 < sent.count ? sent[start + 700].id : nil))
            }
            #expect(queue.queued(limit: 10).isEmpty)
        }
    }

    @Test func removedOutOfOrderAndUnknownIdsIgnored() {
        var queue = OutboxQueue()
        let sent = Self.fanOut(1, activities: 10)
        queue.enqueue(sent)
        queue.remove(ids: ["dlv-1-7", "dlv-nope", "dlv-1-2", "dlv-1-2", "dlv-1-0"])
        #expect(queue.queued(limit: 100).map(\.id) == ["dlv-1-1", "dlv-1-3", "dlv-1-4", "dlv-1-5", "dlv-1-6", "dlv-1-8", "dlv-1-9"])
        #expect(queue.count == 7)
        // Once an id index was needed, later enqueues are found by id too, in any order.
        queue.enqueue([Self.delivery("dlv-2-0", "act-0"), Self.delivery("dlv-2-s", "act-0", .start)])
        queue.remove(ids: ["dlv-2-s", "dlv-1-9", "dlv-1-1"])
        #expect(queue.queued(limit: 100).map(\.id) == ["dlv-1-3", "dlv-1-4", "dlv-1-5", "dlv-1-6", "dlv-1-8", "dlv-2-0"])
        queue.remove(ids: ["dlv-2-0", "dlv-1-8", "dlv-1-6", "dlv-1-5", "dlv-1-4", "dlv-1-3"])
        #expect(queue.count == 0)
        #expect(queue.queued(limit: 100).isEmpty)
        // Empty again: in-order removal after that.
        queue.enqueue(sent)
        queue.remove(ids: sent.map(\.id))
        #expect(queue.count == 0)
    }

    @Test func aNewerDeliveryReplacesTheQueuedOneOfItsActivityAndEvent() {
        var queue = OutboxQueue()
        queue.enqueue([
            Self.delivery("s1", "act-1", .start), Self.delivery("u1", "act-1"), Self.delivery("u2", "act-2"),
            Self.delivery("e1", "act-1", .end),
        ])
        queue.enqueue([Self.delivery("u1b", "act-1")])
        #expect(queue.queued(limit: 10).map(\.id) == ["s1", "u2", "e1", "u1b"])
        #expect(queue.count == 4)
        // The replaced id names nothing any more; the new one is removed by its own.
        queue.remove(ids: ["u1"])
        #expect(queue.count == 4)
        queue.remove(ids: ["s1", "u1b"])
        #expect(queue.queued(limit: 10).map(\.id) == ["u2", "e1"])
        // A replacement of a replacement, and of the front of the queue.
        queue.enqueue([Self.delivery("u2b", "act-2"), Self.delivery("u2c", "act-2")])
        #expect(queue.queued(limit: 10).map(\.id) == ["e1", "u2c"])
        queue.remove(ids: ["e1", "u2c"])
        #expect(queue.count == 0)
    }

    @Test func manyReplacementsBehindAStuckDeliveryStayInOrder() {
        var queue = OutboxQueue()
        // The oldest delivery is never removed, so the holes left by replaced updates pile up behind it
        // until the queue is squeezed.
        queue.enqueue([Self.delivery("stuck", "act-stuck", .start)])
        for update in 1...40 {
            queue.enqueue(Self.fanOut(update, activities: 100))
        }
        #expect(queue.count == 101)
        let expected = ["stuck"] + (0..<100).map { "dlv-40-\($0)" }
        #expect(queue.queued(limit: 1000).map(\.id) == expected)
        #expect(queue.queued(limit: 3).map(\.id) == Array(expected.prefix(3)))
        // Ids still found after the squeeze, in order and not.
        queue.remove(ids: ["dlv-40-5", "dlv-40-0", "dlv-39-1"])
        queue.remove(ids: (6..<100).map { "dlv-40-\($0)" })
        #expect(queue.queued(limit: 1000).map(\.id) == ["stuck", "dlv-40-1", "dlv-40-2", "dlv-40-3", "dlv-40-4"])
        queue.enqueue([Self.delivery("dlv-41-1", "act-1")])
        #expect(queue.queued(limit: 1000).map(\.id) == ["stuck", "dlv-40-2", "dlv-40-3", "dlv-40-4", "dlv-41-1"])
    }

    /// Random enqueues, replacements and removals (in order, reversed, unknown, repeated) against a plain model
    /// of the rules; with the default allowance of stale keys (removals leave their keys behind) and with small
    /// ones, so the index by key is rebuilt often.
    @Test(arguments: [(1, nil), (2, nil), (3, nil), (4, 0), (5, 8), (6, 64)] as [(UInt64, Int?)])
    func matchesAPlainModel(seed: UInt64, staleKeyAllowance: Int?) throws {
        var random = SeededGenerator(seed: seed)
        var queue = staleKeyAllowance.map { OutboxQueue(staleKeyAllowance: $0) } ?? OutboxQueue()
        var model: [Delivery] = []
        var nextId = 0
        for step in 0..<400 {
            switch random.next() % 4 {
            case 0, 1:
                let activities = Int(random.next() % 50) + 1
                let batch = (0..<Int(random.next() % 300) + 1).map { _ in
                    nextId += 1
                    let event = ActivityEvent.allCases[Int(random.next() % 3)]
                    return Self.delivery("dlv-\(nextId)", "act-\(random.next() % UInt64(activities))", event)
                }
                queue.enqueue(batch)
                for delivery in batch {
                    model.removeAll { $0.activityId == delivery.activityId && $0.event == delivery.event }
                    model.append(delivery)
                }
            case 2:
                // A prefix in queue order, with an unknown id now and then.
                var ids = model.prefix(Int(random.next() % UInt64(model.count + 1))).map(\.id)
                if random.next() % 3 == 0 { ids.insert("dlv-\(random.next() % UInt64(nextId + 1))", at: Int(random.next() % UInt64(ids.count + 1))) }
                queue.remove(ids: ids)
                model.removeAll { ids.contains($0.id) }
            default:
                // Any ids, out of order, some twice.
                let ids = (0..<Int(random.next() % 40)).compactMap { _ in model.isEmpty ? nil : model[Int(random.next() % UInt64(model.count))].id }.reversed()
                queue.remove(ids: Array(ids))
                model.removeAll { ids.contains($0.id) }
            }
            // The first difference stops the run: the rest would only repeat it.
            try #require(queue.count == model.count, "step \(step)")
            try #require(queue.queued(limit: Int.max).map(\.id) == model.map(\.id), "step \(step)")
            let limit = Int(random.next() % 20)
            try #require(queue.queued(limit: limit).map(\.id) == model.prefix(limit).map(\.id), "step \(step)")
        }
    }
}

