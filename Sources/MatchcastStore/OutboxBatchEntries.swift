import Foundation
import MatchcastCore

/// The deliveries of one `outboxBatch` row, in queue order: per delivery its id, activity, event and target; the
/// payload they share is the row's `payloadId`.
///
/// Stored as one blob: per field a 2-byte big-endian length and the field's UTF-8 bytes, five fields per delivery.
/// Cheaper to write and to read back than a row per delivery, which is the point: a fan-out queues one row per
/// chunk instead of one per activity.
struct OutboxBatchEntries: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var deliveryId: String
        var activityId: String
        var event: String
        var targetKind: String
        var targetValue: String
    }

    var entries: [Entry]

    init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// The longest field the format holds.
    static let maxFieldBytes = Int(UInt16.max)

    func encoded() throws(StoreError) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 140)
        for entry in entries {
            for field in [entry.deliveryId, entry.activityId, entry.event, entry.targetKind, entry.targetValue] {
                let utf8 = field.utf8
                guard utf8.count <= Self.maxFieldBytes else {
                    throw .invalid("a queued delivery's field is longer than \(Self.maxFieldBytes) bytes")
                }
                bytes.append(UInt8(truncatingIfNeeded: utf8.count >> 8))
                bytes.append(UInt8(truncatingIfNeeded: utf8.count))
                bytes.append(contentsOf: utf8)
            }
        }
        return Data(bytes)
    }

    /// `row` names the row in the error a damaged blob gives.
    init(decoding data: Data, row: Int64) throws(StoreError) {
        let corrupt = StoreError.corrupt("outbox batch \(row): its deliveries cannot be read")
        var entries: [Entry] = []
        let parsed: [Entry]? = data.withUnsafeBytes { raw -> [Entry]? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var offset = 0
            func field() -> String? {
                guard offset + 2 <= bytes.count else { return nil }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
                guard offset + length <= bytes.count else { return nil }
                defer { offset += length }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
            }
            while offset < bytes.count {
                guard let id = field(), let activity = field(), let event = field(), let kind = field(),
                      let value = field()
                else { return nil }
                entries.append(Entry(deliveryId: id, activityId: activity, event: event, targetKind: kind, targetValue: value))
            }
            return entries
        }
        guard let parsed else { throw corrupt }
        self.entries = parsed
    }
}

extension OutboxBatchEntries {
    /// The smallest and the largest activity id of the entries (nil when there are none): a batch row's range.
    var activityRange: (first: String, last: String)? {
        guard var first = entries.first?.activityId else { return nil }
        var last = first
        for entry in entries {
            if entry.activityId < first { first = entry.activityId }
            if entry.activityId > last { last = entry.activityId }
        }
        return (first, last)
    }
}

/// One save's deliveries laid out as the SQL outboxes queue them: a batch row per run of consecutive deliveries
/// sharing a payload, with its activity-id range, and what the save replaces in the queue (the same (activity,
/// event) or the same delivery id). Within one save the later of two such deliveries wins, as it would across saves.
struct OutboxBatchRuns: Sendable {
    struct Run: Sendable {
        /// The run's payload: an index into `QueuedPayloads.firsts`.
        var payload: Int
        var entries: OutboxBatchEntries
        var firstActivityId: String
        var lastActivityId: String
        /// The match of the run's deliveries (they share a payload, so a match).
        var matchId: String
    }

    let runs: [Run]
    /// The activity-id range of the whole save: only batches whose range meets it can hold what it replaces.
    let low: String
    let high: String
    private let keys: Set<String>
    private let ids: Set<String>

    init(_ deliveries: [Delivery], _ payloads: QueuedPayloads) {
        var keys = Set<String>(minimumCapacity: deliveries.count)
        var ids = Set<String>(minimumCapacity: deliveries.count)
        var low = deliveries.first?.activityId ?? ""
        var high = low
        // Walked from the last delivery back: one that a later one of the save replaces is left out.
        var kept = [Bool](repeating: true, count: deliveries.count)
        for position in deliveries.indices.reversed() {
            let fresh = keys.insert(Self.key(deliveries[position].activityId, payloads.events[position])).inserted
            let freshId = ids.insert(deliveries[position].id).inserted
            kept[position] = fresh && freshId
            low = min(low, deliveries[position].activityId)
            high = max(high, deliveries[position].activityId)
        }
        var runs: [Run] = []
        var start = deliveries.startIndex
        while start < deliveries.endIndex {
            var end = start + 1
            while end < deliveries.endIndex, payloads.payloadOf[end] == payloads.payloadOf[start] { end += 1 }
            var entries: [OutboxBatchEntries.Entry] = []
            entries.reserveCapacity(end - start)
            for position in start..<end where kept[position] {
                let delivery = deliveries[position]
                entries.append(.init(
                    deliveryId: delivery.id, activityId: delivery.activityId, event: payloads.events[position],
                    targetKind: delivery.target.kind.rawValue, targetValue: delivery.target.value))
            }
            let batch = OutboxBatchEntries(entries)
            if let range = batch.activityRange {
                runs.append(Run(
                    payload: payloads.payloadOf[start], entries: batch, firstActivityId: range.first,
                    lastActivityId: range.last, matchId: deliveries[start].matchId))
            }
            start = end
        }
        self.runs = runs
        self.low = low
        self.high = high
        self.keys = keys
        self.ids = ids
    }

    /// Whether a queued entry gives way to this save.
    func replaces(_ entry: OutboxBatchEntries.Entry) -> Bool {
        ids.contains(entry.deliveryId) || keys.contains(Self.key(entry.activityId, entry.event))
    }

    private static func key(_ activityId: String, _ event: String) -> String { activityId + "\u{0}" + event }
}
