import Foundation
import MatchcastCore
@testable import MatchcastStore
import PostgresNIO
import Testing

/// The outbox as batches (SQLite v5, PostgreSQL v6): a save's run of deliveries sharing a payload is one stored row;
/// what is removed from it or replaced in it leaves the rest as it was, in order.
@Suite("Store contract: outbox batches")
struct OutboxBatchContractTests {
    /// One fan-out chunk: `count` updates sharing one payload, activities `prefix-000`, `prefix-001`, ...
    static func chunk(_ prefix: String, _ count: Int, timestamp: Int = 1_776_784_329, ids: String = "dlv") -> [Delivery] {
        let template = Outbox.delivery("x", activity: "x", .update, timestamp: timestamp)
        return (0..<count).map { index in
            let activity = prefix + String(format: "-%03d", index)
            return Delivery(
                id: "\(ids)-\(activity)", activityId: activity, target: PushTarget(kind: .updateToken, value: "tok-" + activity),
                sharingWith: template)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aBatchPartlyRemovedKeepsTheRestInOrder(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let first = Self.chunk("a", 40)
            let second = Self.chunk("b", 40)
            try await store.saveActivities([], enqueue: first)
            try await store.saveActivities([], enqueue: second)
            // Every third of the first batch, and the head and tail of the second.
            let removed = Set(first.enumerated().filter { $0.offset % 3 == 0 }.map(\.element.id)
                + [second[0].id, second[39].id])
            try await store.removeQueuedDeliveries(ids: Array(removed).sorted())
            let left = (first + second).filter { !removed.contains($0.id) }
            let queued = try await store.queuedDeliveries(limit: 1000)
            #expect(queued.map(\.id) == left.map(\.id))
            #expect(queued == left)
            #expect(try await store.queuedDeliveryCount() == left.count)
            #expect(try await store.queuedDeliveries(limit: 5).map(\.id) == Array(left.prefix(5)).map(\.id))
            // The last of the first batch and the first of the second: a read across the seam.
            #expect(try await store.queuedDeliveries(limit: 27).map(\.id) == Array(left.prefix(27)).map(\.id))
            try await store.removeQueuedDeliveries(ids: left.map(\.id))
            #expect(try await store.queuedDeliveryCount() == 0)
            #expect(try await store.queuedDeliveries(limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aNewerSaveReplacesOnlyWhatItSupersedes(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let older = Self.chunk("a", 30)
            let ends = older.prefix(10).map { Outbox.delivery("end-" + $0.activityId, activity: $0.activityId, .end) }
            try await store.saveActivities([], enqueue: older)
            try await store.saveActivities([], enqueue: ends)
            // A newer update for activities 10..<20 (same (activity, update)), and a resend of a-025's id.
            let newer = Array(Self.chunk("a", 20, timestamp: 1_776_784_400, ids: "new").suffix(10))
            var resend = Outbox.delivery(older[25].id, activity: older[25].activityId, .update, timestamp: 1_776_784_500)
            resend.target = older[25].target
            try await store.saveActivities([], enqueue: newer + [resend])

            let replaced = Set(newer.map(\.activityId) + [older[25].activityId])
            let expected = older.filter { !replaced.contains($0.activityId) } + ends + newer + [resend]
            let queued = try await store.queuedDeliveries(limit: 1000)
            #expect(queued.map(\.id) == expected.map(\.id))
            #expect(queued.map { $0.payload.aps.timestamp } == expected.map { $0.payload.aps.timestamp })
            #expect(try await store.queuedDeliveryCount() == expected.count)

            // Within one save the later of two deliveries for one (activity, event) wins.
            let twice = [
                Outbox.delivery("dup-1", activity: "z-1", .update, timestamp: 1_776_784_600),
                Outbox.delivery("dup-2", activity: "z-1", .update, timestamp: 1_776_784_700),
            ]
            try await store.saveActivities([], enqueue: twice)
            let last = try await store.queuedDeliveries(limit: 1000).suffix(1)
            #expect(last.map(\.id) == ["dup-2"])
            #expect(try await store.queuedDeliveryCount() == expected.count + 1)
        }
    }
}

@Suite("PostgreSQL outbox batches", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresOutboxBatchTests {
    @Test func aDamagedBatchIsCorruptNotACrash() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.saveActivities([], enqueue: OutboxBatchContractTests.chunk("a", 5))
            try await store.withConnection("test") { connection in
                // Cut short in the middle of a field.
                try await connection.query(
                    "UPDATE outbox_batch SET entries = substring(entries FROM 1 FOR 7)", logger: store.logger
                ).consume()
            }
            await #expect(throws: StoreError.corrupt) { _ = try await store.queuedDeliveries(limit: 10) }
            await #expect(throws: StoreError.corrupt) { _ = try await store.queuedDeliveries(matchId: "epl-mun-liv") }
            await #expect(throws: StoreError.corrupt) { try await store.removeQueuedDeliveries(ids: ["dlv-a-000"]) }
            await #expect(throws: StoreError.corrupt) {
                try await store.saveActivities([], enqueue: [Outbox.delivery("dlv-x", activity: "a-001", .update)])
            }
        }
    }

    @Test func aFanOutChunkIsOneRowAndActivitiesKeepRoomForHOTUpdates() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.saveActivities([], enqueue: OutboxBatchContractTests.chunk("a", 300))
            let (batches, legacy, options) = try await store.withConnection("test") { connection in
                try await connection.query(
                    """
                    SELECT (SELECT count(*) FROM outbox_batch), (SELECT count(*) FROM outbox),
                        (SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'activity'::regclass)
                    """,
                    logger: store.logger
                ).collect((Int, Int, String).self).first ?? (0, 0, "")
            }
            #expect(batches == 1)
            #expect(legacy == 0)
            #expect(options == "fillfactor=50")
        }
    }
}
