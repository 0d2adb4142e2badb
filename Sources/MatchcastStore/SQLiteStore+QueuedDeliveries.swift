import Foundation
import MatchcastCore
internal import GRDB

/// Deliveries ready for the outbox: the match, headers and payload of each distinct update once (an `outboxPayload`
/// row), and per delivery only its id, activity, event and target.
struct QueuedDeliveries: Sendable {
    let deliveries: [Delivery]
    private let payloads: QueuedPayloads

    init(_ deliveries: [Delivery]) {
        self.deliveries = deliveries
        payloads = QueuedPayloads(deliveries)
    }

    /// Queues every delivery, inside the caller's transaction. A newer delivery for the same (activity, event), or
    /// with an id already queued, replaces the queued one and is queued anew (a new rowid: later in the order).
    func write(_ db: Database) throws {
        guard !deliveries.isEmpty else { return }
        let insertPayload = try db.cachedStatement(sql: """
            INSERT INTO outboxPayload (matchId, pushType, topic, priority, expiration, payload) VALUES (?, ?, ?, ?, ?, ?)
            """)
        var payloadIds: [Int64] = []
        payloadIds.reserveCapacity(payloads.firsts.count)
        for first in payloads.firsts {
            let delivery = deliveries[first]
            try insertPayload.execute(arguments: [
                delivery.matchId, delivery.apns.pushType, delivery.apns.topic, delivery.apns.priority,
                delivery.apns.expiration, Data(delivery.payload.bytes),
            ])
            payloadIds.append(db.lastInsertedRowID)
        }
        let insert = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO outbox (activityId, event, deliveryId, targetKind, targetValue, payloadId)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
        for position in deliveries.indices {
            let payload = payloads.payloadOf[position]
            insert.setUncheckedArguments([
                deliveries[position].activityId, payloads.events[position], deliveries[position].id,
                deliveries[position].target.kind.rawValue, deliveries[position].target.value, payloadIds[payload],
            ])
            try insert.execute()
        }
    }

    /// The queued deliveries, oldest first, at most `limit`; the deliveries of one stored payload share it.
    static func read(_ db: Database, limit: Int) throws -> [Delivery] {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT deliveryId, activityId, targetKind, targetValue, payloadId, delivery FROM outbox ORDER BY rowid LIMIT ?",
            arguments: [limit])
        guard !rows.isEmpty else { return [] }
        var payloadIds = Set<Int64>()
        for row in rows { if let id: Int64 = try row.decode(atIndex: 4) { payloadIds.insert(id) } }
        var templates: [Int64: Delivery] = [:]
        if !payloadIds.isEmpty {
            let list = "[" + payloadIds.map(String.init).joined(separator: ",") + "]"
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT id, matchId, pushType, topic, priority, expiration, payload FROM outboxPayload
                    WHERE id IN (SELECT value FROM json_each(?))
                    """,
                arguments: [list]) {
                let id: Int64 = try row.decode(atIndex: 0)
                let bytes: Data = try row.decode(atIndex: 6)
                let payload: PushPayload
                do {
                    payload = try PushPayload(encoded: Array(bytes))
                } catch {
                    throw StoreError.corrupt("stored outbox payload \(id): \(error)")
                }
                templates[id] = Delivery(
                    id: "", matchId: try row.decode(atIndex: 1), activityId: "",
                    target: PushTarget(kind: .updateToken, value: ""),
                    apns: APNsHeaders(
                        topic: try row.decode(atIndex: 3), priority: try row.decode(atIndex: 4),
                        expiration: try row.decode(atIndex: 5), pushType: try row.decode(atIndex: 2)),
                    payload: payload)
            }
        }
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(rows.count)
        for row in rows {
            let id: String = try row.decode(atIndex: 0)
            if let payloadId: Int64 = try row.decode(atIndex: 4) {
                guard let template = templates[payloadId] else {
                    throw StoreError.corrupt("queued delivery '\(id)' refers to missing outbox payload \(payloadId)")
                }
                guard let kind = PushTarget.Kind(rawValue: try row.decode(atIndex: 2)) else {
                    throw StoreError.corrupt("queued delivery '\(id)' has an unknown target kind")
                }
                deliveries.append(Delivery(
                    id: id, activityId: try row.decode(atIndex: 1),
                    target: PushTarget(kind: kind, value: try row.decode(atIndex: 3)), sharingWith: template))
            } else {
                // Queued before v4: the whole delivery, as it was written.
                deliveries.append(try SQLiteStore.delivery(row, "queued delivery"))
            }
        }
        return deliveries
    }

    /// Forgets the payloads no queued delivery refers to any more: all of them once the outbox is empty, and the
    /// unreferenced ones when many have gathered (an outbox that never empties).
    static func collectPayloads(_ db: Database) throws {
        if try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM outbox)")! {
            try db.execute(sql: "DELETE FROM outboxPayload")
            return
        }
        guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxPayload") ?? 0 > 4096 else { return }
        try db.execute(sql: """
            DELETE FROM outboxPayload WHERE id NOT IN (SELECT payloadId FROM outbox WHERE payloadId IS NOT NULL)
            """)
    }
}
