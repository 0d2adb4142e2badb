import MatchcastCore

/// The outbox of the in-process stores: at most one queued delivery per (activity, event), in the order queued.
/// A value; its owner (an actor) makes it atomic with the records it saves alongside.
public struct OutboxQueue: Sendable {
    private struct Key: Hashable, Sendable {
        var activityId: String
        var event: ActivityEvent
    }

    private struct Entry: Sendable {
        var sequence: Int
        var delivery: Delivery
    }

    private var entries: [Key: Entry] = [:]
    private var keyById: [String: Key] = [:]
    private var nextSequence = 0

    public init() {}

    public var count: Int { entries.count }

    /// Queues each delivery; a newer one replaces the queued one with the same activity and event.
    public mutating func enqueue(_ deliveries: [Delivery]) {
        for delivery in deliveries {
            let key = Key(activityId: delivery.activityId, event: delivery.event)
            if let replaced = entries[key] { keyById[replaced.delivery.id] = nil }
            nextSequence += 1
            entries[key] = Entry(sequence: nextSequence, delivery: delivery)
            keyById[delivery.id] = key
        }
    }

    /// The oldest `limit` queued deliveries, oldest first.
    public func queued(limit: Int) -> [Delivery] {
        guard limit > 0 else { return [] }
        return entries.values.sorted { $0.sequence < $1.sequence }.prefix(limit).map(\.delivery)
    }

    /// Forgets the deliveries with these ids; unknown ids are ignored.
    public mutating func remove(ids: [String]) {
        for id in ids {
            guard let key = keyById.removeValue(forKey: id) else { continue }
            entries[key] = nil
        }
    }
}

/// The dead letters of the in-process stores, one per (delivery, sink).
public struct DeadLetterList: Sendable {
    private var letters: [String: DeadLetter] = [:]

    public init() {}

    public mutating func record(_ new: [DeadLetter]) {
        for letter in new { letters[letter.delivery.id + "\u{1F}" + letter.sink] = letter }
    }

    /// Newest first, then by delivery id and sink.
    public func newest(limit: Int) -> [DeadLetter] {
        guard limit > 0 else { return [] }
        return letters.values.sorted {
            if $0.recordedAt != $1.recordedAt { return $0.recordedAt > $1.recordedAt }
            if $0.delivery.id != $1.delivery.id { return $0.delivery.id < $1.delivery.id }
            return $0.sink < $1.sink
        }.prefix(limit).map { $0 }
    }
}
