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
        /// As the delivery keeps it: written from its digits, read back into them.
        var targetValue: CompactToken
    }

    var entries: [Entry]

    init(_ entries: [Entry]) {
        self.entries = entries
    }

    /// The longest field the format holds.
    static let maxFieldBytes = Int(UInt16.max)

    func encoded() throws(StoreError) -> Data {
        var size = 0
        for entry in entries {
            size += 10 + entry.deliveryId.utf8.count + entry.activityId.utf8.count + entry.event.utf8.count
                + entry.targetKind.utf8.count + entry.targetValue.utf8Count
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        for entry in entries {
            try Self.append(entry.deliveryId, to: &bytes)
            try Self.append(entry.activityId, to: &bytes)
            try Self.append(entry.event, to: &bytes)
            try Self.append(entry.targetKind, to: &bytes)
            guard entry.targetValue.utf8Count <= Self.maxFieldBytes else { throw Self.tooLong }
            entry.targetValue.withUTF8 { Self.appendField($0, to: &bytes) }
        }
        return Data(bytes)
    }

    private static let tooLong = StoreError.invalid("a queued delivery's field is longer than \(maxFieldBytes) bytes")

    private static func append(_ field: String, to bytes: inout [UInt8]) throws(StoreError) {
        guard field.utf8.count <= maxFieldBytes else { throw tooLong }
        // A native string's bytes are contiguous: copied in one go, not one code unit at a time.
        if field.utf8.withContiguousStorageIfAvailable({ appendField($0, to: &bytes) }) == nil {
            appendField(field.utf8, to: &bytes)
        }
    }

    /// A field of at most `maxFieldBytes`: its length, then its bytes.
    private static func appendField<UTF8: Collection<UInt8>>(_ utf8: UTF8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: utf8.count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// Only the delivery ids of an encoded batch, in order (the other fields are skipped, not decoded); nil when the
    /// blob is damaged. What the relay's removal needs to know whether a batch goes whole.
    static func deliveryIds(decoding data: Data) -> [String]? {
        var ids: [String] = []
        let read = walkDeliveryIds(data) { id in
            ids.append(String(decoding: id, as: UTF8.self))
            return true
        }
        return read ? ids : nil
    }

    /// How many deliveries an encoded batch holds when their ids, in order, are `ids[start...]`'s first ones; nil
    /// when they are not (or the blob is damaged). The relay removes what it sent in queue order, so this is how its
    /// removal finds a batch sent whole, comparing bytes in place rather than making and hashing a string per id.
    static func count(decoding data: Data, idsFrom ids: [String], at start: Int) -> Int? {
        var count = 0
        let matched = walkDeliveryIds(data) { id in
            guard start + count < ids.count, equal(ids[start + count], id) else { return false }
            count += 1
            return true
        }
        return matched ? count : nil
    }

    /// Hands `body` each delivery id's bytes, in order, skipping the other fields; false when the blob is damaged or
    /// `body` said stop.
    private static func walkDeliveryIds(_ data: Data, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        data.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            var offset = 0
            var field = 0
            while offset < bytes.count {
                guard offset + 2 <= bytes.count else { return false }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
                guard offset + length <= bytes.count else { return false }
                if field == 0, !body(UnsafeBufferPointer(rebasing: bytes[offset..<offset + length])) { return false }
                offset += length
                field = (field + 1) % 5
            }
            return field == 0
        }
    }

    private static func equal(_ id: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        id.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.count == bytes.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, utf8.count) == 0)
        } ?? id.utf8.elementsEqual(bytes)
    }

    /// `row` names the row in the error a damaged blob gives.
    init(decoding data: Data, row: Int64) throws(StoreError) {
        let corrupt = StoreError.corrupt("outbox batch \(row): its deliveries cannot be read")
        var entries: [Entry] = []
        let parsed: [Entry]? = data.withUnsafeBytes { raw -> [Entry]? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var offset = 0
            func fieldBytes() -> UnsafeBufferPointer<UInt8>? {
                guard offset + 2 <= bytes.count else { return nil }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
                guard offset + length <= bytes.count else { return nil }
                defer { offset += length }
                return UnsafeBufferPointer(rebasing: bytes[offset..<offset + length])
            }
            func field() -> String? {
                fieldBytes().map { String(decoding: $0, as: UTF8.self) }
            }
            while offset < bytes.count {
                guard let id = field(), let activity = field(), let event = field(), let kind = field(),
                      let value = fieldBytes().map(CompactToken.init(utf8:))
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

    /// What a save replaces in the queue: entries of the same (activity, event), or with the same delivery id.
    struct Replacements: Sendable {
        fileprivate var keys: Set<Key>
        fileprivate var ids: Set<String>

        /// Whether a queued entry gives way to this save.
        func replace(_ entry: OutboxBatchEntries.Entry) -> Bool {
            ids.contains(entry.deliveryId) || keys.contains(Key(activityId: entry.activityId, event: entry.event))
        }

        /// Adds a delivery of the save; false when the save already replaces it (its (activity, event) or its id).
        @discardableResult
        mutating func add(_ delivery: Delivery, event: String) -> Bool {
            let fresh = keys.insert(Key(activityId: delivery.activityId, event: event)).inserted
            return ids.insert(delivery.id).inserted && fresh
        }

        init(capacity: Int) {
            keys = Set(minimumCapacity: capacity)
            ids = Set(minimumCapacity: capacity)
        }
    }

    let runs: [Run]
    /// The activity-id range of the whole save: only batches whose range meets it can hold what it replaces.
    let low: String
    let high: String
    private let deliveries: [Delivery]
    private let events: [String]
    /// Made by `init` when it needed them to find repeats within the save; otherwise by `replacements()`.
    private let known: Replacements?

    /// What a delivery replaces besides its id: the queued one of the same activity and event.
    fileprivate struct Key: Hashable, Sendable {
        var activityId: String
        var event: String
    }

    init(_ deliveries: [Delivery], _ payloads: QueuedPayloads) {
        var low = deliveries.first?.activityId ?? ""
        var high = low
        // A fan-out chunk's deliveries go to its activities in id order, one each: then no delivery of the save
        // replaces another (a delivery id names one delivery of one activity), and nothing need be hashed unless
        // the queue holds something in the save's range.
        var ascending = true
        for position in deliveries.indices.dropFirst() where ascending {
            ascending = deliveries[position - 1].activityId < deliveries[position].activityId
        }
        var kept = [Bool](repeating: true, count: deliveries.count)
        var known: Replacements?
        if ascending {
            high = deliveries.last?.activityId ?? ""
        } else {
            var found = Replacements(capacity: deliveries.count)
            // Walked from the last delivery back: one that a later one of the save replaces is left out.
            for position in deliveries.indices.reversed() {
                kept[position] = found.add(deliveries[position], event: payloads.events[position])
                low = min(low, deliveries[position].activityId)
                high = max(high, deliveries[position].activityId)
            }
            known = found
        }
        var runs: [Run] = []
        var start = deliveries.startIndex
        while start < deliveries.endIndex {
            var end = start + 1
            while end < deliveries.endIndex, payloads.payloadOf[end] == payloads.payloadOf[start] { end += 1 }
            var entries: [OutboxBatchEntries.Entry] = []
            entries.reserveCapacity(end - start)
            for position in start..<end where kept[position] {
                // Read in place: copying a whole `Delivery` out per entry is most of this loop's cost otherwise.
                entries.append(.init(
                    deliveryId: deliveries[position].id, activityId: deliveries[position].activityId,
                    event: payloads.events[position], targetKind: deliveries[position].target.kind.rawValue,
                    targetValue: deliveries[position].target.token))
            }
            let batch = OutboxBatchEntries(entries)
            if let range = ascending ? entries.first.map({ ($0.activityId, entries[entries.count - 1].activityId) }) : batch.activityRange {
                runs.append(Run(
                    payload: payloads.payloadOf[start], entries: batch, firstActivityId: range.first,
                    lastActivityId: range.last, matchId: deliveries[start].matchId))
            }
            start = end
        }
        self.runs = runs
        self.low = low
        self.high = high
        self.deliveries = deliveries
        events = payloads.events
        self.known = known
    }

    /// What the save replaces in the queue, for looking into the batches its range meets.
    func replacements() -> Replacements {
        if let known { return known }
        var found = Replacements(capacity: deliveries.count)
        for position in deliveries.indices { found.add(deliveries[position], event: events[position]) }
        return found
    }
}
