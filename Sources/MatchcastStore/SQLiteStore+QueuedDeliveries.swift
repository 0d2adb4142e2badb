import Foundation
import MatchcastCore
internal import GRDB

/// Deliveries ready for the outbox: the match, headers and payload of each distinct update once (an `outboxPayload`
/// row), and the deliveries themselves in `outboxBatch` rows: each row holds a run of consecutive deliveries that
/// share a payload (a fan-out chunk is one row), in queue order. Rows queued by earlier versions stay in `outbox`
/// (one row per delivery) and come first: they are older than any batch.
struct QueuedDeliveries: Sendable {
    let deliveries: [Delivery]
    private let payloads: QueuedPayloads

    init(_ deliveries: [Delivery]) {
        self.deliveries = deliveries
        payloads = QueuedPayloads(deliveries)
    }

    /// Queues every delivery, inside the caller's transaction. A newer delivery for the same (activity, event), or
    /// with an id already queued, replaces the queued one and is queued anew (later in the order).
    func write(_ db: Database, _ legacy: SQLiteLegacyOutbox) throws {
        guard !deliveries.isEmpty else { return }
        let runs = OutboxBatchRuns(deliveries, payloads)
        try supersede(runs, db, legacy)
        let insertPayload = try SQLiteRawStatement(db, sql: """
            INSERT INTO outboxPayload (matchId, pushType, topic, priority, expiration, payload, activityIdAt)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """)
        var payloadIds: [Int64] = []
        payloadIds.reserveCapacity(payloads.firsts.count)
        for first in payloads.firsts {
            let delivery = deliveries[first]
            // A kick-off's starts cut from one template keep the template, their activity ids in their entries.
            let template = delivery.startTemplate
            insertPayload.bind(1, delivery.matchId)
            insertPayload.bind(2, delivery.apns.pushType)
            insertPayload.bind(3, delivery.apns.topic)
            insertPayload.bind(4, delivery.apns.priority)
            insertPayload.bind(5, delivery.apns.expiration)
            insertPayload.bind(6, bytes: template?.encoded ?? delivery.payload.bytes)
            insertPayload.bind(7, template?.activityIdOffset)
            try insertPayload.run()
            payloadIds.append(db.lastInsertedRowID)
        }
        let insert = try SQLiteRawStatement(db, sql: """
            INSERT INTO outboxBatch (payloadId, count, firstActivityId, lastActivityId, entries) VALUES (?1, ?2, ?3, ?4, ?5)
            """)
        for run in runs.runs {
            insert.bind(1, payloadIds[run.payload])
            insert.bind(2, run.entries.entries.count)
            insert.bind(3, run.firstActivityId)
            insert.bind(4, run.lastActivityId)
            insert.bind(5, try run.entries.encoded())
            try insert.run()
        }
    }

    /// Takes out of the queue what these deliveries replace: the same (activity, event) or the same id. Batches are
    /// looked into only where their activity-id range meets this save's, so the chunks of one fan-out (disjoint
    /// ranges, walked in id order) pass each other without being read.
    private func supersede(_ runs: OutboxBatchRuns, _ db: Database, _ legacy: SQLiteLegacyOutbox) throws {
        if try legacy.mayHoldRows(db) {
            let delete = try db.cachedStatement(sql: "DELETE FROM outbox WHERE (activityId = ? AND event = ?) OR deliveryId = ?")
            for position in deliveries.indices {
                try delete
                    .execute(arguments: [deliveries[position].activityId, payloads.events[position], deliveries[position].id])
            }
        }
        let select = try SQLiteRawStatement(
            db, sql: "SELECT id, entries FROM outboxBatch WHERE lastActivityId >= ?1 AND firstActivityId <= ?2")
        select.bind(1, runs.low)
        select.bind(2, runs.high)
        var candidates: [(id: Int64, entries: Data)] = []
        try select.forEach {
            guard let id = try select.integer(0, "a queued batch's id"), let entries = try select.data(1, "queued batch \(id)") else {
                throw StoreError.corrupt("a queued batch without its id or entries")
            }
            candidates.append((id, entries))
        }
        guard !candidates.isEmpty else { return }
        let replacements = runs.replacements()
        for (id, entries) in candidates {
            let batch = try OutboxBatchEntries(decoding: entries, row: id)
            let kept = batch.entries.filter { !replacements.replace($0) }
            if kept.count != batch.entries.count { try Self.replace(batch: id, with: kept, db) }
        }
    }

    /// Rewrites a batch row with the deliveries it keeps, or deletes it when none is left.
    private static func replace(batch id: Int64, with kept: [OutboxBatchEntries.Entry], _ db: Database) throws {
        let batch = OutboxBatchEntries(kept)
        guard let (first, last) = batch.activityRange else {
            try db.cachedStatement(sql: "DELETE FROM outboxBatch WHERE id = ?").execute(arguments: [id])
            return
        }
        try db.cachedStatement(sql: "UPDATE outboxBatch SET count = ?, firstActivityId = ?, lastActivityId = ?, entries = ? WHERE id = ?")
            .execute(arguments: [kept.count, first, last, try batch.encoded(), id])
    }

    /// Removes the deliveries with these ids, wherever they are queued. Batches are read from the oldest on, as the
    /// relay removes what it sent, which is the head of the queue, and the scan stops once every id is found.
    static func remove(ids: [String], _ db: Database, _ legacy: SQLiteLegacyOutbox) throws {
        let legacyRows = try legacy.mayHoldRows(db)
        if legacyRows {
            try db.cachedStatement(sql: "DELETE FROM outbox WHERE deliveryId IN (SELECT value FROM json_each(?))")
                .execute(arguments: [SQLiteStore.jsonArray(ids)])
        }
        // Most often the relay sent whole batches from the head of the queue, in queue order: each batch's ids are
        // the next ones of `ids`, compared in place. From the first batch that is not, the rest are looked up.
        var next = 0
        var inOrder = true
        var wanted = Set<String>()
        var changes: [(Int64, [OutboxBatchEntries.Entry])] = []
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT id, entries FROM outboxBatch ORDER BY id"))
        while inOrder ? next < ids.count : !wanted.isEmpty, let row = try rows.next() {
            let id: Int64 = row[0]
            let data: Data = row[1]
            if inOrder {
                if let count = OutboxBatchEntries.count(decoding: data, idsFrom: ids, at: next) {
                    next += count
                    changes.append((id, []))
                    continue
                }
                inOrder = false
                wanted = Set(ids[next...])
            }
            // A batch sent whole: its ids alone say so, without decoding the rest.
            if let batchIds = OutboxBatchEntries.deliveryIds(decoding: data), batchIds.allSatisfy(wanted.contains) {
                for deliveryId in batchIds { wanted.remove(deliveryId) }
                changes.append((id, []))
                continue
            }
            let batch = try OutboxBatchEntries(decoding: data, row: id)
            var kept: [OutboxBatchEntries.Entry] = []
            for entry in batch.entries where wanted.remove(entry.deliveryId) == nil { kept.append(entry) }
            if kept.count != batch.entries.count { changes.append((id, kept)) }
        }
        for (id, kept) in changes { try replace(batch: id, with: kept, db) }
        try collectPayloads(db, legacyRows: legacyRows)
    }

    static func count(_ db: Database) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT (SELECT COUNT(*) FROM outbox) + (SELECT COALESCE(SUM(count), 0) FROM outboxBatch)")) ?? 0
    }

    /// The queued deliveries, oldest first, at most `limit`; the deliveries of one stored payload share it.
    static func read(_ db: Database, limit: Int, _ legacyOutbox: SQLiteLegacyOutbox) throws -> [Delivery] {
        var templates = OutboxTemplates()
        var deliveries: [Delivery] = []
        let legacy = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT deliveryId, activityId, targetKind, targetValue, payloadId, delivery FROM outbox ORDER BY rowid LIMIT ?"),
            arguments: [limit])
        legacyOutbox.read(found: !legacy.isEmpty)
        if !legacy.isEmpty {
            var payloadIds = Set<Int64>()
            for row in legacy { if let id: Int64 = try row.decode(atIndex: 4) { payloadIds.insert(id) } }
            try loadTemplates(payloadIds, into: &templates, db)
            for row in legacy {
                let id: String = try row.decode(atIndex: 0)
                if let payloadId: Int64 = try row.decode(atIndex: 4) {
                    deliveries.append(try templates.delivery(
                        id: id, activityId: row.decode(atIndex: 1), kind: row.decode(atIndex: 2),
                        token: CompactToken(row.decode(atIndex: 3) as String), payloadId: payloadId))
                } else {
                    // Queued before v4: the whole delivery, as it was written.
                    deliveries.append(try SQLiteStore.delivery(row, "queued delivery"))
                }
            }
        }
        guard deliveries.count < limit else { return deliveries }
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT id, payloadId, entries FROM outboxBatch ORDER BY id"))
        while deliveries.count < limit, let row = try rows.next() {
            let id: Int64 = row[0]
            let payloadId: Int64 = row[1]
            let batch = try OutboxBatchEntries(decoding: row[2], row: id)
            if templates.byId[payloadId] == nil { try loadTemplates([payloadId], into: &templates, db) }
            try templates.append(batch, payloadId: payloadId, limit: limit - deliveries.count, to: &deliveries)
        }
        return deliveries
    }

    /// Stored payloads read back as deliveries to share.
    private static func loadTemplates(_ ids: Set<Int64>, into templates: inout OutboxTemplates, _ db: Database) throws {
        guard !ids.isEmpty else { return }
        let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
        for row in try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT id, matchId, pushType, topic, priority, expiration, payload, activityIdAt FROM outboxPayload
                WHERE id IN (SELECT value FROM json_each(?))
                """),
            arguments: [list]) {
            try templates.add(
                id: row.decode(atIndex: 0), matchId: row.decode(atIndex: 1), pushType: row.decode(atIndex: 2),
                topic: row.decode(atIndex: 3), priority: row.decode(atIndex: 4), expiration: row.decode(atIndex: 5),
                payload: row.decode(atIndex: 6), activityIdAt: row.decode(atIndex: 7))
        }
    }

    /// Forgets the payloads no queued delivery refers to any more: all of them once the outbox is empty, and the
    /// unreferenced ones when many have gathered (an outbox that never empties).
    static func collectPayloads(_ db: Database, legacyRows: Bool) throws {
        let empty = legacyRows
            ? try Bool.fetchOne(db.cachedStatement(
                sql: "SELECT NOT EXISTS (SELECT 1 FROM outbox) AND NOT EXISTS (SELECT 1 FROM outboxBatch)")) == true
            : try Bool.fetchOne(db.cachedStatement(sql: "SELECT NOT EXISTS (SELECT 1 FROM outboxBatch)")) == true
        if empty {
            try db.cachedStatement(sql: "DELETE FROM outboxPayload").execute()
            return
        }
        guard try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM outboxPayload")) ?? 0 > 4096 else { return }
        try db.cachedStatement(sql: """
            DELETE FROM outboxPayload WHERE id NOT IN (
                SELECT payloadId FROM outbox WHERE payloadId IS NOT NULL UNION SELECT payloadId FROM outboxBatch)
            """).execute()
    }
}
