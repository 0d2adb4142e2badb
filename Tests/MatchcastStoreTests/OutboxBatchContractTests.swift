import Foundation
import MatchcastCore
@testable import MatchcastStore
import PostgresNIO
import Testing

/// The outbox as batches (SQLite v5; PostgreSQL v6, and v7 chunks): a save's run of deliveries is one stored row;
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

    /// The relay removes what it sent in queue order, most often whole batches from the head; these are removals in
    /// that order that end part-way into a batch, or skip one.
    @Test(arguments: StoreKind.allCases)
    func removalsInQueueOrderTakeWholeBatchesAndStopWhereTheIdsDo(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let chunks = [Self.chunk("a", 40), Self.chunk("b", 40), Self.chunk("c", 40), Self.chunk("d", 40)]
            for chunk in chunks { try await store.saveActivities([], enqueue: chunk) }
            // The first batch, the second, and the head of the third.
            try await store.removeQueuedDeliveries(ids: (chunks[0] + chunks[1] + chunks[2].prefix(15)).map(\.id))
            #expect(try await store.queuedDeliveries(limit: 1000).map(\.id) == (chunks[2].dropFirst(15) + chunks[3]).map(\.id))
            // The rest of the third is skipped: the fourth goes, the third stays as it was.
            try await store.removeQueuedDeliveries(ids: chunks[3].map(\.id))
            #expect(try await store.queuedDeliveries(limit: 1000) == Array(chunks[2].dropFirst(15)))
            // Ids in order, one of them not queued (sent and removed before): the rest still go.
            try await store.removeQueuedDeliveries(ids: chunks[2].map(\.id))
            #expect(try await store.queuedDeliveryCount() == 0)
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

@Suite("PostgreSQL outbox chunks", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresOutboxBatchTests {
    @Test func aDamagedChunkIsCorruptNotACrash() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.saveActivities([], enqueue: OutboxBatchContractTests.chunk("a", 5))
            for damage in ["payload_refs = payload_refs[1:2]", "payload_refs = array_fill(7, ARRAY[5])"] {
                try await store.withConnection("test") { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "UPDATE outbox_chunk SET " + damage), logger: store.logger
                    ).consume()
                }
                await #expect(throws: StoreError.corrupt) { _ = try await store.queuedDeliveries(limit: 10) }
                await #expect(throws: StoreError.corrupt) { _ = try await store.queuedDeliveries(matchId: "epl-mun-liv") }
            }
        }
    }

    @Test func aFanOutChunkIsOneRowAndActivitiesKeepRoomForHOTUpdates() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.saveActivities([], enqueue: OutboxBatchContractTests.chunk("a", 300))
            // A kick-off's chunk: a start per activity, each with a payload of its own, is one row too.
            let starts = (0..<300).map { index in
                Outbox.delivery("dlv-start-\(index)", activity: String(format: "k-%03d", index), .start,
                                timestamp: 1_776_784_000 + index)
            }
            try await store.saveActivities([], enqueue: starts)
            let (chunks, legacy, options) = try await Self.counts(store)
            #expect(chunks == 2)
            #expect(legacy == 0)
            #expect(options == "fillfactor=50")
            let queued = try await store.queuedDeliveries(limit: 1000)
            #expect(queued.suffix(300).map { $0.jsonBytes() } == starts.map { $0.jsonBytes() })

            // The relay claims the starts, then removes the updates it sent: nothing is left.
            try await store.removeQueuedDeliveries(ids: starts.map(\.id))
            #expect(try await store.queuedDeliveryCount() == 300)
            try await store.removeQueuedDeliveries(ids: queued.prefix(300).map(\.id))
            #expect(try await Self.counts(store).chunks == 0)
        }
    }

    private static func counts(_ store: PostgresStore) async throws -> (chunks: Int, legacy: Int, options: String) {
        try await store.withConnection("test") { connection in
            try await connection.query(
                """
                SELECT (SELECT count(*) FROM outbox_chunk), (SELECT count(*) FROM outbox),
                    (SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'activity_row'::regclass)
                """,
                logger: store.logger
            ).collect((Int, Int, String).self).first ?? (0, 0, "")
        }
    }
}
