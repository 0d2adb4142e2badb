import Foundation
import MatchcastCore
internal import GRDB

extension SQLiteStore {
    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        try await saveWhole(records, deliveries, match: nil)
    }

    /// The records written whole with their deliveries, and the match's row first when given, in one write job.
    func saveWhole(_ records: [ActivityRecord], _ deliveries: [Delivery], match: SQLiteMatchRow?) async throws(StoreError) {
        guard !records.isEmpty || !deliveries.isEmpty || match != nil else { return }
        let batch = try ActivityBatch(records)
        let queued = QueuedDeliveries(deliveries)
        try await write(
            "saving \(records.count) activities with \(deliveries.count) deliveries",
            mayWait: Self.mayWait(activities: records.count, deliveries: deliveries.count)
        ) { [contentPruning, legacyOutbox] db in
            try match?.write(db)
            try batch.write(db, contentPruning)
            try queued.write(db, legacyOutbox)
        }
    }

    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        return try await read("reading queued deliveries") { db in
            try QueuedDeliveries.read(db, limit: limit, legacyOutbox)
        }
    }

    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        try await write("removing \(ids.count) queued deliveries", mayWait: Self.mayWait(activities: 0, deliveries: ids.count)) {
            [legacyOutbox] db in
            try QueuedDeliveries.remove(ids: ids, db, legacyOutbox)
        }
    }

    /// Whether a write of activities and deliveries may wait to commit with others (`SQLiteWriteQueue`): a fan-out to a
    /// few activities (a match with few followers), whose delay is a few milliseconds for a few devices, or the removal
    /// of a few sent deliveries. A large chunk commits at once: the rest of its fan-out waits behind it, as the relay's
    /// next batch waits behind the removal of its last.
    static func mayWait(activities: Int, deliveries: Int) -> Bool {
        deliveries > 0 && activities <= 64 && deliveries <= 64
    }

    /// `strings` as a JSON array, for `json_each`: one bound value however many there are.
    static func jsonArray(_ strings: [String]) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(strings.count * 34 + 2)
        for (position, string) in strings.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for byte in string.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                default:
                    out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    public func queuedDeliveryCount() async throws(StoreError) -> Int {
        try await read("counting queued deliveries") { db in try QueuedDeliveries.count(db) }
    }

    public func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError) {
        guard !letters.isEmpty else { return }
        let rows = letters.map { ($0, Data($0.delivery.jsonBytes())) }
        try await write("recording \(letters.count) dead letters") { db in
            for (letter, bytes) in rows {
                try db.cachedStatement(sql: """
                        INSERT OR REPLACE INTO deadLetter (deliveryId, sink, status, reason, delivery, recordedAt)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """).execute(arguments: [letter.delivery.id, letter.sink, letter.status, letter.reason, bytes, SQLiteDateText.text(letter.recordedAt)])
            }
        }
    }

    public func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter] {
        guard limit > 0 else { return [] }
        return try await read("reading dead letters") { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM deadLetter ORDER BY recordedAt DESC, deliveryId, sink LIMIT ?"),
                    arguments: [limit]
            ).map { row in
                DeadLetter(
                    delivery: try Self.delivery(row, "dead letter"), sink: try row.decode(forColumn: "sink"),
                    status: try row.decode(forColumn: "status"), reason: try row.decode(forColumn: "reason"),
                    recordedAt: try row.decode(forColumn: "recordedAt"))
            }
        }
    }

    static func delivery(_ row: Row, _ what: String) throws -> Delivery {
        let id: String = try row.decode(forColumn: "deliveryId")
        let bytes: Data = try row.decode(forColumn: "delivery")
        do {
            return try Delivery(jsonBytes: Array(bytes))
        } catch {
            throw StoreError.corrupt("stored \(what) '\(id)': \(error)")
        }
    }
}
