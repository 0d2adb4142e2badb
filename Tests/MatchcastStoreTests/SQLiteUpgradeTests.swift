import Foundation
import GRDB
import MatchcastCore
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture
private typealias P = PreviousRelease

/// Upgrading from the previous release: a SQLite file as v3 left it (lifecycles as JSON, whole deliveries in the
/// outbox), opened by this release, which migrates it to v4 in place. Nothing is lost or changed on the way.
@Suite("SQLite upgrade from v3")
struct SQLiteUpgradeTests {
    let directory = TemporaryDirectory()

    /// A database file migrated only up to v3, with `activities` and `deliveries` written the way the v3 code did
    /// (`git show 27338f3:Sources/MatchcastStore/SQLiteStore+Activities.swift`, `+Outbox.swift`).
    static func writeV3Database(at path: String, activities: [ActivityRecord], deliveries: [Delivery]) throws {
        let pool = try DatabasePool(path: path, configuration: SQLiteStore.makeConfiguration())
        try SQLiteStore.migrator.migrate(pool, upTo: "v3")
        #expect(try pool.read { try SQLiteStore.migrator.completedMigrations($0) } == ["v1", "v2", "v3"])
        try pool.write { db in
            for device in P.devices {
                try db.execute(
                    sql: "INSERT INTO device (id, secretHash, createdAt) VALUES (?, ?, ?)",
                    arguments: [device.id, device.secretHash, device.createdAt])
            }
            for record in activities {
                try db.execute(
                    sql: """
                        INSERT INTO activity (id, deviceId, matchId, environment, phase, updateToken, lifecycle, updatedAt)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        record.activityId, record.deviceId, record.matchId, record.environment.rawValue,
                        record.phase.rawValue, record.updateToken, try JSONColumn.encode(record.lifecycle, "lifecycle"),
                        record.updatedAt,
                    ])
            }
            for delivery in deliveries {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO outbox (activityId, event, deliveryId, delivery) VALUES (?, ?, ?, ?)",
                    arguments: [delivery.activityId, delivery.event.rawValue, delivery.id, Data(delivery.jsonBytes())])
            }
        }
        try pool.close()
    }

    @Test("a v3 file opens as v4 with every activity and every queued delivery as they were")
    func upgradesInPlace() async throws {
        defer { directory.remove() }
        let path = directory.path("matchcast.sqlite")
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let activities = P.activities()
        let queued = P.deliveries()
        try Self.writeV3Database(at: path, activities: activities, deliveries: queued)

        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        #expect(try await store.appliedMigrations() == ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13"])

        // Every activity reads back as written, by id, by match, by device, by token.
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
        // A match's equal contents became one row; the same text of another match stayed its own.
        let contentRows = try await store.read("test") { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?", arguments: [P.match])
        }
        #expect(contentRows == 4, "kick-off, goal, minute, full time")
        #expect(try await store.read("test") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contentState") } == 5)

        // The queued deliveries: same bytes, same order.
        let before = try await store.queuedDeliveries(limit: 100)
        #expect(before.map(\.id) == queued.map(\.id))
        #expect(before.map { $0.jsonBytes() } == queued.map { $0.jsonBytes() }, "byte-identical")
        #expect(try await store.queuedDeliveryCount() == queued.count)

        // The open token rule still holds on the migrated rows.
        var thief = activities[0]
        thief.lifecycle = P.lifecycle("act-thief", .init(
            phase: .active, updateToken: "upd-active", lastTimestamp: 0, sent: nil, sentAt: nil, sentStaleDate: nil,
            startedAt: P.stamp(0), held: nil, heldStaleness: nil, endHeld: false, final: nil, channelId: nil))
        await #expect(throws: StoreError.self) { try await store.saveActivity(thief) }

        // A fan-out on the migrated rows: its activities saved in place, its deliveries queued after the old ones.
        let fanOut = P.fanOut(activities)
        #expect(fanOut.records.count == 5)
        try await store.saveActivities(fanOut.records, enqueue: fanOut.deliveries)
        var expected = byId
        for record in fanOut.records { expected[record.activityId] = record }
        for record in expected.values {
            #expect(try await store.activity(id: record.activityId) == record, "after the fan-out: \(record.activityId)")
        }
        #expect(try await store.openActivities() == expected.values.filter(\.isOpen).sorted { $0.activityId < $1.activityId })
        // The new delivery for (act-channel, end) replaced the old one: queued anew, at the end.
        let oldLeft = queued.filter { old in !fanOut.deliveries.contains { $0.activityId == old.activityId && $0.event == old.event } }
        let after = try await store.queuedDeliveries(limit: 100)
        #expect(after.map(\.id) == oldLeft.map(\.id) + fanOut.deliveries.map(\.id))
        #expect(after.map { $0.jsonBytes() } == oldLeft.map { $0.jsonBytes() } + fanOut.deliveries.map { $0.jsonBytes() })

        // Removal: old rows and new ones, until the outbox is empty.
        try await store.removeQueuedDeliveries(ids: [oldLeft[0].id, fanOut.deliveries[1].id])
        let remaining = after.filter { $0.id != oldLeft[0].id && $0.id != fanOut.deliveries[1].id }
        #expect(try await store.queuedDeliveries(limit: 100).map { $0.jsonBytes() } == remaining.map { $0.jsonBytes() })
        try await store.removeQueuedDeliveries(ids: remaining.map(\.id))
        #expect(try await store.queuedDeliveryCount() == 0)
        #expect(try await store.queuedDeliveries(limit: 100).isEmpty)

        // Reopened, it is still v4 and the same.
        try store.close()
        let reopened = try SQLiteStore(path: path)
        defer { try? reopened.close() }
        #expect(try await reopened.appliedMigrations() == ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13"])
        #expect(try await reopened.openActivities() == expected.values.filter(\.isOpen).sorted { $0.activityId < $1.activityId })
        #expect(reopened.legacyOutbox.isKnownEmpty, "opened with nothing left in the old queue, its writes stop asking")
    }

    @Test("deliveries queued the v4 way (a row each, payload shared) survive v5, go out first, and give way to newer ones")
    func v4QueuedRowsSurviveV5() async throws {
        defer { directory.remove() }
        let path = directory.path("matchcast.sqlite")
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let activities = P.activities()
        let queued = P.deliveries()
        try Self.writeV3Database(at: path, activities: activities, deliveries: [])
        // Up to v4, then the outbox written as v4 wrote it: the payload once per delivery here, a row per delivery.
        do {
            let pool = try DatabasePool(path: path, configuration: SQLiteStore.makeConfiguration())
            try SQLiteStore.migrator.migrate(pool, upTo: "v4")
            try await pool.write { db in
                for delivery in queued {
                    try db.execute(
                        sql: """
                            INSERT INTO outboxPayload (matchId, pushType, topic, priority, expiration, payload)
                            VALUES (?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            delivery.matchId, delivery.apns.pushType, delivery.apns.topic, delivery.apns.priority,
                            delivery.apns.expiration, Data(delivery.payload.bytes),
                        ])
                    try db.execute(
                        sql: """
                            INSERT OR REPLACE INTO outbox (activityId, event, deliveryId, targetKind, targetValue, payloadId)
                            VALUES (?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            delivery.activityId, delivery.event.rawValue, delivery.id, delivery.target.kind.rawValue,
                            delivery.target.value, db.lastInsertedRowID,
                        ])
                }
            }
            try pool.close()
        }

        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        #expect(try await store.appliedMigrations() == ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13"])
        #expect(!store.legacyOutbox.isKnownEmpty, "the old queue holds deliveries")
        let before = try await store.queuedDeliveries(limit: 100)
        #expect(before.map { $0.jsonBytes() } == queued.map { $0.jsonBytes() }, "byte-identical, in order")
        #expect(try await store.queuedDeliveryCount() == queued.count)

        // A fan-out after the upgrade: queued in batches, after the v4 rows; what it replaces leaves the v4 rows.
        let fanOut = P.fanOut(activities)
        try await store.saveActivities(fanOut.records, enqueue: fanOut.deliveries)
        let oldLeft = queued.filter { old in !fanOut.deliveries.contains { $0.activityId == old.activityId && $0.event == old.event } }
        #expect(oldLeft.count < queued.count, "the fan-out replaces at least one v4 row")
        let after = try await store.queuedDeliveries(limit: 100)
        #expect(after.map { $0.jsonBytes() } == oldLeft.map { $0.jsonBytes() } + fanOut.deliveries.map { $0.jsonBytes() })
        #expect(try await store.queuedDeliveryCount() == oldLeft.count + fanOut.deliveries.count)

        // Removed in two steps: the old rows' ids with a batch's, then the rest.
        try await store.removeQueuedDeliveries(ids: [oldLeft[0].id, fanOut.deliveries[0].id])
        #expect(try await store.queuedDeliveries(limit: 100).map(\.id) == after.map(\.id).filter {
            $0 != oldLeft[0].id && $0 != fanOut.deliveries[0].id
        })
        #expect(!store.legacyOutbox.isKnownEmpty)
        try await store.removeQueuedDeliveries(ids: after.map(\.id))
        #expect(try await store.queuedDeliveryCount() == 0)
        let payloads = try await store.read("test") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxPayload") }
        #expect(payloads == 0, "an empty outbox keeps no payload")
        // Read empty, the old queue is known empty: the writes below no longer look into it, and work as before.
        #expect(try await store.queuedDeliveries(limit: 100).isEmpty)
        #expect(store.legacyOutbox.isKnownEmpty)
        let again = P.fanOut(activities)
        try await store.saveActivities(again.records, enqueue: again.deliveries)
        #expect(try await store.queuedDeliveries(limit: 100).map(\.id) == again.deliveries.map(\.id))
        try await store.removeQueuedDeliveries(ids: again.deliveries.map(\.id))
        #expect(try await store.queuedDeliveryCount() == 0)
        #expect(try await store.read("test") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxPayload") } == 0)
    }
}
