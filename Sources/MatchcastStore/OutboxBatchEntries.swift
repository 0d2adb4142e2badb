import Foundation

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
