import Foundation
import MatchcastCore
internal import GRDB

extension SQLiteStore {
    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        guard !records.isEmpty || !deliveries.isEmpty else { return }
        let rows = try Self.rows(records)
        let queued = deliveries.map { QueuedRow(delivery: $0) }
        try await write("saving \(records.count) activities with \(deliveries.count) deliveries") { [rows, queued] db in
            for row in rows {
                try Self.upsert(row, db)
            }
            let insert = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO outbox (activityId, event, deliveryId, delivery) VALUES (?, ?, ?, ?)
                """)
            for row in queued {
                try insert.execute(arguments: [row.activityId, row.event, row.deliveryId, row.bytes])
            }
        }
    }

    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        return try await read("reading queued deliveries") { db in
            try Row.fetchAll(db, sql: "SELECT deliveryId, delivery FROM outbox ORDER BY rowid LIMIT ?", arguments: [limit])
                .map { row in try Self.delivery(row, "queued delivery") }
        }
    }

    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        try await write("removing \(ids.count) queued deliveries") { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM outbox WHERE deliveryId = ?")
            for id in ids {
                try delete.execute(arguments: [id])
            }
        }
    }

    public func queuedDeliveryCount() async throws(StoreError) -> Int {
        try await read("counting queued deliveries") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }

    public func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError) {
        guard !letters.isEmpty else { return }
        let rows = letters.map { ($0, Data($0.delivery.jsonBytes())) }
        try await write("recording \(letters.count) dead letters") { db in
            for (letter, bytes) in rows {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO deadLetter (deliveryId, sink, status, reason, delivery, recordedAt)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [letter.delivery.id, letter.sink, letter.status, letter.reason, bytes, letter.recordedAt])
            }
        }
    }

    public func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter] {
        guard limit > 0 else { return [] }
        return try await read("reading dead letters") { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM deadLetter ORDER BY recordedAt DESC, deliveryId, sink LIMIT ?", arguments: [limit]
            ).map { row in
                DeadLetter(
                    delivery: try Self.delivery(row, "dead letter"), sink: try row.decode(forColumn: "sink"),
                    status: try row.decode(forColumn: "status"), reason: try row.decode(forColumn: "reason"),
                    recordedAt: try row.decode(forColumn: "recordedAt"))
            }
        }
    }

    /// A queued delivery ready for SQL.
    private struct QueuedRow: Sendable {
        var activityId: String
        var event: String
        var deliveryId: String
        var bytes: Data

        init(delivery: Delivery) {
            activityId = delivery.activityId
            event = delivery.event.rawValue
            deliveryId = delivery.id
            bytes = Data(delivery.jsonBytes())
        }
    }

    private static func delivery(_ row: Row, _ what: String) throws -> Delivery {
        let id: String = try row.decode(forColumn: "deliveryId")
        let bytes: Data = try row.decode(forColumn: "delivery")
        do {
            return try Delivery(jsonBytes: Array(bytes))
        } catch {
            throw StoreError.corrupt("stored \(what) '\(id)': \(error)")
        }
    }
}
