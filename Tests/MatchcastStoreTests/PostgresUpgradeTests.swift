import Foundation
import MatchcastCore
@testable import MatchcastStore
import PostgresNIO
import Testing

private typealias F = StoreFixture
private typealias P = PreviousRelease

/// Upgrading from an earlier release on PostgreSQL: a schema as v4 left it (lifecycles as JSON, whole deliveries
/// in the outbox), as v5 left it (a row per queued delivery), as v6 left it (batches), or as v12 left it (chunks stored
/// uncompressed), migrated by this release. Nothing is lost or changed on the way, and what was queued before goes out
/// first.
@Suite("PostgreSQL upgrades from v4, v5, v6 and v12", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresUpgradeTests {
    /// Writes `activities` and `deliveries` into a v4 schema the way the v4 code did
    /// (`git show 27338f3:Sources/MatchcastStore/PostgresStore+Activities.swift`, `+Outbox.swift`).
    static func writeV4Rows(_ store: PostgresStore, activities: [ActivityRecord], deliveries: [Delivery]) async throws {
        let logger = store.logger
        var lifecycles: [String] = []
        for record in activities { lifecycles.append(try JSONColumn.encode(record.lifecycle, "lifecycle")) }
        let encoded = lifecycles
        try await store.transaction("writing v4 rows") { connection in
            for device in P.devices {
                try await connection.query(
                    """
                    INSERT INTO device (id, secret_hash, created_at)
                    VALUES (\(device.id), \(device.secretHash), \(device.createdAt.storedPrecision))
                    """,
                    logger: logger
                ).consume()
            }
            for (record, lifecycle) in zip(activities, encoded) {
                try await connection.query(
                    """
                    INSERT INTO activity (id, device_id, match_id, environment, phase, update_token, lifecycle, updated_at)
                    VALUES (\(record.activityId), \(record.deviceId), \(record.matchId), \(record.environment.rawValue),
                            \(record.phase.rawValue), \(record.updateToken), \(lifecycle), \(record.updatedAt.storedPrecision))
                    """,
                    logger: logger
                ).consume()
            }
            for delivery in deliveries {
                let bytes = Data(delivery.jsonBytes())
                try await connection.query(
                    """
                    DELETE FROM outbox
                    WHERE (activity_id = \(delivery.activityId) AND event = \(delivery.event.rawValue))
                        OR delivery_id = \(delivery.id)
                    """,
                    logger: logger
                ).consume()
                try await connection.query(
                    """
                    INSERT INTO outbox (activity_id, event, delivery_id, delivery, match_id)
                    VALUES (\(delivery.activityId), \(delivery.event.rawValue), \(delivery.id), \(bytes), \(delivery.matchId))
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    @Test("a v4 schema migrates to v5 with every activity and every queued delivery as they were")
    func upgradesInPlace() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        let activities = P.activities()
        let queued = P.deliveries()
        let store = try PostgresStore(configuration: configuration)
        do {
            try await withStoreRunning(store) {
                try await store.migrate(upTo: "v4")
                #expect(try await store.appliedMigrations() == ["v1", "v2", "v3", "v4"])
                try await Self.writeV4Rows(store, activities: activities, deliveries: queued)
                try await store.migrate()
                #expect(try await store.appliedMigrations() == PostgresStore.migrations.map(\.name))
                try await Self.check(store, activities: activities, queued: queued)
            }
        } catch {
            try? await store.dropSchema()
            throw error
        }
        try await store.dropSchema()
    }

    /// Queues `deliveries` into a v5 schema the way the v5 code did (`git show 7eb3b7a:Sources/MatchcastStore/
    /// PostgresStore+Writes.swift`): the payload once in `outbox_payload`, a row per delivery in `outbox`.
    static func writeV5Rows(_ store: PostgresStore, deliveries: [Delivery]) async throws {
        let logger = store.logger
        try await store.transaction("writing v5 rows") { connection in
            var payloadIds: [ObjectIdentifier: Int64] = [:]
            for delivery in deliveries {
                var payloadId = payloadIds[delivery.commonIdentity]
                if payloadId == nil {
                    let apns = delivery.apns
                    payloadId = try await connection.query(
                        """
                        INSERT INTO outbox_payload (match_id, push_type, topic, priority, expiration, payload)
                        VALUES (\(delivery.matchId), \(apns.pushType), \(apns.topic), \(apns.priority),
                            \(Int64(apns.expiration)), \(Data(delivery.payload.bytes)))
                        RETURNING id
                        """,
                        logger: logger
                    ).collect(Int64.self).first
                    payloadIds[delivery.commonIdentity] = payloadId
                }
                try await connection.query(
                    """
                    INSERT INTO outbox (activity_id, event, delivery_id, match_id, target_kind, target_value, payload_id)
                    VALUES (\(delivery.activityId), \(delivery.event.rawValue), \(delivery.id), \(delivery.matchId),
                        \(delivery.target.kind.rawValue), \(delivery.target.value), \(payloadId))
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    @Test("rows queued by v5 survive v6 and are sent before what is queued after it")
    func v5QueuedRowsSurviveV6() async throws {
        try await Self.withV5Store { store, activities in
            let legacy = OutboxBatchContractTests.chunk("a", 6)
                + [Outbox.delivery("dlv-end-a-001", activity: "a-001", .end)]
            try await Self.writeV5Rows(store, deliveries: legacy)
            try await store.migrate()
            #expect(try await store.appliedMigrations() == PostgresStore.migrations.map(\.name))
            for record in activities {
                #expect(try await store.activity(id: record.activityId) == record, "activity \(record.activityId)")
            }
            #expect(try await store.queuedDeliveries(limit: 100) == legacy)
            #expect(try await store.queuedDeliveryCount() == legacy.count)

            // New deliveries go after them; one replaces a legacy row (same activity and event), which then
            // goes out in its new place.
            let newer = OutboxBatchContractTests.chunk("b", 3)
                + [Outbox.delivery("dlv-new-a-002", activity: "a-002", .update, timestamp: 1_776_784_999)]
            try await store.saveActivities([], enqueue: newer)
            let expected = legacy.filter { $0.activityId != "a-002" || $0.event != .update } + newer
            #expect(try await store.queuedDeliveries(limit: 100).map(\.id) == expected.map(\.id))
            #expect(try await store.queuedDeliveries(limit: 3).map(\.id) == Array(expected.prefix(3)).map(\.id))
            #expect(try await store.queuedDeliveries(matchId: "epl-mun-liv").map(\.id) == expected.map(\.id))
            #expect(try await store.queuedDeliveryCount() == expected.count)

            try await store.removeQueuedDeliveries(ids: [legacy[0].id, newer[1].id])
            let left = expected.filter { $0.id != legacy[0].id && $0.id != newer[1].id }
            #expect(try await store.queuedDeliveries(limit: 100) == left)
            try await store.removeQueuedDeliveries(ids: left.map(\.id))
            #expect(try await store.queuedDeliveryCount() == 0)
        }
    }

    /// Runs `body` on a store in a fresh schema at v5, its activities (`P.activities()`) written as v4 left them;
    /// drops the schema afterwards.
    static func withV5Store(_ body: (PostgresStore, [ActivityRecord]) async throws -> Void) async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        let store = try PostgresStore(configuration: configuration)
        do {
            try await withStoreRunning(store) {
                try await store.migrate(upTo: "v4")
                let activities = P.activities()
                try await Self.writeV4Rows(store, activities: activities, deliveries: [])
                try await store.migrate(upTo: "v5")
                try await body(store, activities)
            }
        } catch {
            try? await store.dropSchema()
            throw error
        }
        try await store.dropSchema()
    }

    /// Queues `deliveries` into a v6 schema the way the v6 code did (`git show 54a9075:Sources/MatchcastStore/
    /// PostgresStore+Writes.swift`): each distinct payload once in `outbox_payload`, one `outbox_batch` row per run of
    /// consecutive deliveries sharing a payload, their ids, activities, events and targets packed in `entries`.
    static func writeV6Rows(_ store: PostgresStore, deliveries: [Delivery]) async throws {
        let logger = store.logger
        var runs: [[Delivery]] = []
        for delivery in deliveries {
            if let last = runs.last?.last, last.commonIdentity == delivery.commonIdentity {
                runs[runs.count - 1].append(delivery)
            } else {
                runs.append([delivery])
            }
        }
        let grouped = runs
        try await store.transaction("writing v6 rows") { connection in
            for run in grouped {
                let first = run[0]
                let apns = first.apns
                let payloadId = try await connection.query(
                    """
                    INSERT INTO outbox_payload (match_id, push_type, topic, priority, expiration, payload)
                    VALUES (\(first.matchId), \(apns.pushType), \(apns.topic), \(apns.priority), \(Int64(apns.expiration)),
                        \(Data(first.payload.bytes)))
                    RETURNING id
                    """,
                    logger: logger
                ).collect(Int64.self).first
                let entries = OutboxBatchEntries(run.map {
                    .init(deliveryId: $0.id, activityId: $0.activityId, event: $0.event.rawValue,
                          targetKind: $0.target.kind.rawValue, targetValue: $0.target.token)
                })
                let activities = run.map(\.activityId)
                try await connection.query(
                    """
                    INSERT INTO outbox_batch (match_id, payload_id, count, first_activity_id, last_activity_id, entries)
                    VALUES (\(first.matchId), \(payloadId), \(run.count), \(activities.min()!), \(activities.max()!),
                        \(try entries.encoded()))
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    @Test("v6 batches and open activities survive v7 in order; later saves replace and remove what they queued")
    func v6BatchesSurviveV7() async throws {
        try await Self.withV5Store { store, activities in
            let v5 = [Outbox.delivery("dlv-v5-end", activity: "a-900", .end)]
            try await Self.writeV5Rows(store, deliveries: v5)
            try await store.migrate(upTo: "v6")
            // Every event and target kind, a fan-out chunk sharing one payload, and starts with a payload each.
            var starts: [Delivery] = []
            for index in 0..<4 {
                var start = Outbox.delivery(
                    "dlv-start-\(index)", activity: "k-\(index)", .start, timestamp: 1_776_784_000 + index)
                start.target = PushTarget(kind: .pushToStartToken, value: "pts-\(index)")
                starts.append(start)
            }
            let v6 = P.deliveries() + OutboxBatchContractTests.chunk("a", 6) + starts
            try await Self.writeV6Rows(store, deliveries: v6)
            try await store.migrate()
            #expect(try await store.appliedMigrations() == PostgresStore.migrations.map(\.name))

            for record in activities {
                #expect(try await store.activity(id: record.activityId) == record, "activity \(record.activityId)")
            }
            #expect(try await store.openActivities() == activities.filter(\.isOpen).sorted { $0.activityId < $1.activityId })
            let queued = v5 + v6
            let read = try await store.queuedDeliveries(limit: 100)
            #expect(read.map(\.id) == queued.map(\.id))
            #expect(read.map { $0.jsonBytes() } == queued.map { $0.jsonBytes() }, "byte-identical")
            #expect(try await store.queuedDeliveries(limit: 3).map(\.id) == Array(queued.prefix(3)).map(\.id))
            #expect(try await store.queuedDeliveries(matchId: P.otherMatch).map(\.id) == ["dlv-old-other"])
            #expect(try await store.queuedDeliveryCount() == queued.count)
            let logger = store.logger
            let (chunks, payloads, batchTable) = try await store.withConnection("test") { connection in
                try await connection.query(
                    """
                    SELECT (SELECT count(*) FROM outbox_chunk), (SELECT count(*) FROM outbox_payload),
                        to_regclass('outbox_batch') IS NOT NULL
                    """,
                    logger: logger
                ).collect((Int, Int, Bool).self).first ?? (0, 0, true)
            }
            #expect(chunks == 5 + 1 + starts.count, "one chunk per v6 batch")
            #expect(payloads == 1, "only the payload of the v5 row is left in outbox_payload")
            #expect(!batchTable)

            // A newer update of a-002 replaces the converted one, which then goes out in its new place; a resent
            // start keeps its id and moves too.
            let newer = [Outbox.delivery("dlv-new-a-002", activity: "a-002", .update, timestamp: 1_776_784_999)]
            try await store.saveActivities([], enqueue: newer + [starts[1]])
            let expected = queued.filter { $0.id != "dlv-a-002" && $0.id != starts[1].id } + newer + [starts[1]]
            #expect(try await store.queuedDeliveries(limit: 100).map(\.id) == expected.map(\.id))
            #expect(try await store.queuedDeliveryCount() == expected.count)

            try await store.removeQueuedDeliveries(ids: [v5[0].id, "dlv-a-003", starts[2].id, "not-queued"])
            let left = expected.filter { ![v5[0].id, "dlv-a-003", starts[2].id].contains($0.id) }
            #expect(try await store.queuedDeliveries(limit: 100).map { $0.jsonBytes() } == left.map { $0.jsonBytes() })
            try await store.removeQueuedDeliveries(ids: left.map(\.id))
            #expect(try await store.queuedDeliveryCount() == 0)
            let rest = try await store.withConnection("test") { connection in
                try await connection.query(
                    "SELECT (SELECT count(*) FROM outbox_chunk) + (SELECT count(*) FROM outbox_payload)", logger: logger
                ).collect(Int.self).first ?? -1
            }
            #expect(rest == 0, "no chunk and no payload left once everything is removed")
        }
    }

    static func check(_ store: PostgresStore, activities: [ActivityRecord], queued: [Delivery]) async throws {
        for record in activities {
            let read = try await store.activity(id: record.activityId)
            #expect(read == record, "activity \(record.activityId)")
            #expect(read?.lifecycle.stored == record.lifecycle.stored, "stored lifecycle of \(record.activityId)")
        }
        let byId = Dictionary(uniqueKeysWithValues: activities.map { ($0.activityId, $0) })
        #expect(try await store.openActivities() == activities.filter(\.isOpen).sorted { $0.activityId < $1.activityId })
        #expect(try await store.activities(matchId: P.match)
            == activities.filter { $0.matchId == P.match }.sorted { $0.activityId < $1.activityId })
        #expect(try await store.activities(deviceId: "dev-b")
            == activities.filter { $0.deviceId == "dev-b" }.sorted { $0.activityId < $1.activityId })
        #expect(try await store.activity(updateToken: "upd-active") == byId["act-active"], "the open holder of a shared token")
        #expect(try await store.activity(updateToken: "upd-channel") == byId["act-channel"])
        let logger = store.logger
        let contentRows = try await store.withConnection("test") { connection in
            try await connection.query(
                "SELECT match_id, COUNT(*)::bigint FROM content_state GROUP BY match_id ORDER BY match_id", logger: logger
            ).collect((String, Int).self).map { "\($0.0)=\($0.1)" }
        }
        #expect(contentRows == ["\(P.otherMatch)=1", "\(P.match)=4"], "one row per distinct content of a match")

        let before = try await store.queuedDeliveries(limit: 100)
        #expect(before.map(\.id) == queued.map(\.id))
        #expect(before.map { $0.jsonBytes() } == queued.map { $0.jsonBytes() }, "byte-identical")
        #expect(try await store.queuedDeliveryCount() == queued.count)
        #expect(try await store.queuedDeliveries(matchId: P.otherMatch).map(\.id) == ["dlv-old-other"])

        var thief = activities[0]
        thief.lifecycle = P.lifecycle("act-thief", .init(
            phase: .active, updateToken: "upd-active", lastTimestamp: 0, sent: nil, sentAt: nil, sentStaleDate: nil,
            startedAt: P.stamp(0), held: nil, heldStaleness: nil, endHeld: false, final: nil, channelId: nil))
        await #expect(throws: StoreError.self) { try await store.saveActivity(thief) }

        let fanOut = P.fanOut(activities)
        #expect(fanOut.records.count == 5)
        try await store.saveActivities(fanOut.records, enqueue: fanOut.deliveries)
        var expected = byId
        for record in fanOut.records { expected[record.activityId] = record }
        for record in expected.values {
            #expect(try await store.activity(id: record.activityId) == record, "after the fan-out: \(record.activityId)")
        }
        #expect(try await store.openActivities() == expected.values.filter(\.isOpen).sorted { $0.activityId < $1.activityId })
        let oldLeft = queued.filter { old in !fanOut.deliveries.contains { $0.activityId == old.activityId && $0.event == old.event } }
        let after = try await store.queuedDeliveries(limit: 100)
        #expect(after.map(\.id) == oldLeft.map(\.id) + fanOut.deliveries.map(\.id))
        #expect(after.map { $0.jsonBytes() } == oldLeft.map { $0.jsonBytes() } + fanOut.deliveries.map { $0.jsonBytes() })

        try await store.removeQueuedDeliveries(ids: [oldLeft[0].id, fanOut.deliveries[1].id])
        let remaining = after.filter { $0.id != oldLeft[0].id && $0.id != fanOut.deliveries[1].id }
        #expect(try await store.queuedDeliveries(limit: 100).map { $0.jsonBytes() } == remaining.map { $0.jsonBytes() })
        try await store.removeQueuedDeliveries(ids: remaining.map(\.id))
        #expect(try await store.queuedDeliveryCount() == 0)
    }

    @Test("a chunk v12 queued uncompressed is read and removed after v13, and v13 queues its chunks compressed but for the tokens")
    func v12ChunksSurviveV13() async throws {
        let store = try PostgresStore(configuration: try PostgresTestServer.freshConfiguration())
        do {
            try await withStoreRunning(store) {
                try await store.migrate(upTo: "v12")
                // Enough deliveries in one chunk for its arrays to pass PostgreSQL's 2 kB threshold for compressing.
                func chunk(_ range: Range<Int>) -> [Delivery] {
                    range.map { Outbox.delivery(String(format: "dlv_%04d", $0), activity: String(format: "act-%04d", $0), .update) }
                }
                let before = chunk(0..<300)
                try await store.saveActivities([], enqueue: before)
                #expect(try await Self.chunkCompressions(store) == ["none/none"], "v12 stores the arrays as they are")

                try await store.migrate()
                let after = chunk(300..<600)
                try await store.saveActivities([], enqueue: after)
                let lz4 = try await Self.serverHasLZ4(store)
                // Every array but the tokens, as the columns say: 'x' extended, 'e' external; 'l' lz4, '' the default.
                #expect(try await Self.columnSettings(store) == [
                    "activity_ids": lz4 ? "x l" : "e ", "delivery_ids": lz4 ? "x l" : "e ", "events": lz4 ? "x l" : "e ",
                    "payload_refs": lz4 ? "x l" : "e ", "payloads": lz4 ? "x l" : "e ", "target_kinds": lz4 ? "x l" : "e ",
                    "target_values": "e "])
                // The tokens stay as they are: these ones would compress, a real token's random digits would not.
                #expect(try await Self.chunkCompressions(store) == ["none/none", lz4 ? "lz4/none" : "none/none"])

                let queued = try await store.queuedDeliveries(limit: 1_000)
                #expect(queued.map(\.id) == (before + after).map(\.id))
                #expect(queued.map { $0.jsonBytes() } == (before + after).map { $0.jsonBytes() }, "byte-identical")
                // A removal of part of a compressed chunk rewrites what is left of it.
                let sent = [before[10], after[10], after[11]]
                try await store.removeQueuedDeliveries(ids: sent.map(\.id))
                let left = (before + after).filter { !sent.map(\.id).contains($0.id) }
                let requeued = try await store.queuedDeliveries(limit: 1_000)
                #expect(requeued.map { $0.jsonBytes() } == left.map { $0.jsonBytes() })
                #expect(try await Self.chunkCompressions(store) == Array(repeating: lz4 ? "lz4/none" : "none/none", count: 2),
                        "the v12 chunk, rewritten, is compressed too")
                try await store.removeQueuedDeliveries(ids: left.map(\.id))
                #expect(try await store.queuedDeliveryCount() == 0)
            }
        } catch {
            try? await store.dropSchema()
            throw error
        }
        try await store.dropSchema()
    }

    /// How each `outbox_chunk` row's delivery ids and tokens are stored, in queue order ("none" when not compressed).
    static func chunkCompressions(_ store: PostgresStore) async throws -> [String] {
        let logger = store.logger
        return try await store.withConnection("test") { connection in
            try await connection.query(
                """
                SELECT COALESCE(pg_column_compression(delivery_ids), 'none') || '/'
                    || COALESCE(pg_column_compression(target_values), 'none')
                FROM outbox_chunk ORDER BY id
                """, logger: logger
            ).collect(String.self)
        }
    }

    /// Each array column of `outbox_chunk`: its storage and its compression (`pg_attribute`).
    static func columnSettings(_ store: PostgresStore) async throws -> [String: String] {
        let logger = store.logger
        let arrays = ["payloads", "delivery_ids", "activity_ids", "events", "target_kinds", "target_values", "payload_refs"]
        let rows = try await store.withConnection("test") { connection in
            try await connection.query(
                """
                SELECT attname::text, attstorage::text || ' ' || attcompression::text FROM pg_attribute
                WHERE attrelid = 'outbox_chunk'::regclass AND attname::text = ANY(\(arrays))
                """, logger: logger
            ).collect((String, String).self)
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    static func serverHasLZ4(_ store: PostgresStore) async throws -> Bool {
        let logger = store.logger
        return try await store.withConnection("test") { connection in
            try await connection.query(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'", logger: logger
            ).collect(Bool.self) == [true]
        }
    }
}
