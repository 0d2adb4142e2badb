import MatchcastCore

/// The outbox of the in-process stores: at most one queued delivery per (activity, event), in the order queued.
/// A value; its owner (an actor) makes it atomic with the records it saves alongside.
///
/// Built for the broker's common case: a fan-out queues one delivery per activity, and the relay removes them
/// soon after, in the order queued. The deliveries sit in an array in queue order (a replaced or removed one
/// leaves a hole), from `head` on; a removal by id first looks where the previous one stopped, so ids that come
/// in queue order need no index by id. One that is not there (out of order, or unknown) builds that index,
/// kept until the queue is empty again. Holes are dropped from the front as `head` passes them, and the whole
/// array is squeezed once holes outnumber the deliveries. A removal leaves the delivery's key in the index by key
/// (taking it out would hash the activity id once more, for every delivery sent); an enqueue tells such a stale
/// entry from a queued one by the entry it points at, and the stale ones go when the queue empties or outnumber
/// the queued ones.
public struct OutboxQueue: Sendable {
    private struct Key: Hashable, Sendable {
        var activityId: String
        var event: ActivityEvent
    }

    /// What a removal reads of each entry, beside it: reading these never copies the delivery out.
    private struct Tag: Sendable {
        let id: String
        let key: Key
        /// False once the delivery is removed or replaced (its entry is then a hole).
        var queued = true
    }

    /// By position − `base`; nil for a hole.
    private var entries: [Delivery?] = []
    /// Beside `entries`, index for index.
    private var tags: [Tag] = []
    /// The position of `entries[0]`. Positions only grow: a squeeze gives every delivery a fresh one.
    private var base = 0
    /// Index in `entries` of the first delivery still queued (or `entries.count`).
    private var head = 0
    /// The position of each queued delivery by (activity, event), and of some removed ones (`isQueued` tells).
    private var positionByKey: [Key: Int] = [:]
    /// Deliveries queued.
    private var queuedCount = 0
    /// The position of each queued delivery by id; only while a removal has needed it.
    private var positionById: [String: Int]?
    /// Index in `entries` where the next removal looks first: just after the last one removed.
    private var cursor = 0

    /// Stale keys allowed beyond the number of queued deliveries before the index by key is rebuilt.
    private let staleKeyAllowance: Int

    public init() {
        self.init(staleKeyAllowance: 1 << 17)
    }

    /// `staleKeyAllowance`: a fan-out's worth by default (tests make rebuilds frequent with a small one).
    init(staleKeyAllowance: Int) {
        self.staleKeyAllowance = staleKeyAllowance
    }

    public var count: Int { queuedCount }

    /// Queues each delivery; a newer one replaces the queued one with the same activity and event.
    public mutating func enqueue(_ deliveries: [Delivery]) {
        entries.reserveRoom(for: deliveries.count)
        tags.reserveRoom(for: deliveries.count)
        for index in deliveries.indices {
            let position = base + entries.count
            let tag = Tag(id: deliveries[index].id, key: Key(activityId: deliveries[index].activityId, event: deliveries[index].event))
            if let replaced = positionByKey.updateValue(position, forKey: tag.key), isQueued(replaced) {
                forget(at: replaced - base)
            }
            entries.append(deliveries[index])
            tags.append(tag)
            queuedCount += 1
            positionById?[tag.id] = position
        }
        squeezeIfSparse()
        // Stale keys are bounded: rebuilt (in time proportional to the queue) once they outnumber the queued ones
        // and a fan-out's worth, so a queue that never empties neither grows without end nor rebuilds often.
        if positionByKey.count - queuedCount > Swift.max(queuedCount, staleKeyAllowance) { reindexKeys() }
    }

    /// The oldest `limit` queued deliveries, oldest first.
    public func queued(limit: Int) -> [Delivery] {
        guard limit > 0 else { return [] }
        var result: [Delivery] = []
        result.reserveCapacity(Swift.min(limit, count))
        var index = head
        while index < entries.count, result.count < limit {
            if let delivery = entries[index] { result.append(delivery) }
            index += 1
        }
        return result
    }

    /// Forgets the deliveries with these ids; unknown ids are ignored.
    public mutating func remove(ids: [String]) {
        for id in ids {
            guard let index = find(id), tags[index].queued else { continue }
            forget(at: index)  // its key stays in `positionByKey`, stale
            cursor = index + 1
        }
        if queuedCount == 0 {
            // Empty: start afresh (the id index, if any, is no longer needed; every key left is stale).
            positionByKey.removeAll(keepingCapacity: true)  // as deleting its keys one by one would have
            base += entries.count
            entries.removeAll(keepingCapacity: entries.capacity <= 1 << 16)
            tags.removeAll(keepingCapacity: tags.capacity <= 1 << 16)
            head = 0
            cursor = 0
            positionById = nil
        } else {
            dropFront()
        }
    }

    // MARK: Internals

    /// The index in `entries` of the queued delivery with this id.
    private mutating func find(_ id: String) -> Int? {
        if positionById == nil {
            // Where the last removal stopped, skipping holes: the next id in queue order is there.
            var index = Swift.max(cursor, head)
            while index < tags.count, !tags[index].queued { index += 1 }
            if index < tags.count, tags[index].id == id { return index }
            var built: [String: Int] = [:]
            built.reserveCapacity(count)
            for index in head..<tags.count where tags[index].queued { built[tags[index].id] = base + index }
            positionById = built
        }
        guard let position = positionById?.removeValue(forKey: id) else { return nil }
        return position - base
    }

    /// Whether the delivery at this position is still queued (a position in `positionByKey` may be stale).
    private func isQueued(_ position: Int) -> Bool {
        let index = position - base
        return index >= head && index < tags.count && tags[index].queued
    }

    /// Makes a hole of the delivery at this index in `entries` (its key, if still pointing here, turns stale).
    private mutating func forget(at index: Int) {
        guard tags[index].queued else { return }
        if positionById?[tags[index].id] == base + index { positionById?[tags[index].id] = nil }
        tags[index].queued = false
        entries[index] = nil
        queuedCount -= 1
    }

    /// Rebuilds the index by key from the queued deliveries alone, dropping the stale keys. It keeps its storage: it
    /// grows back to as many keys before the next rebuild, and a fan-out that queues faster than the relay removes
    /// rebuilds it several times, each of which would otherwise grow a fresh table, doubling by doubling.
    private mutating func reindexKeys() {
        positionByKey.removeAll(keepingCapacity: true)
        for at in head..<tags.count where tags[at].queued { positionByKey[tags[at].key] = base + at }
    }

    /// Moves `head` past the holes at the front, and drops them once they are half the array.
    private mutating func dropFront() {
        while head < tags.count, !tags[head].queued { head += 1 }
        if head > 1024, head > entries.count / 2 {
            entries.removeFirst(head)
            tags.removeFirst(head)
            base += head
            cursor = Swift.max(0, cursor - head)
            head = 0
        }
    }

    /// Rewrites the array without holes once they outnumber the queued deliveries.
    private mutating func squeezeIfSparse() {
        dropFront()
        let holes = entries.count - head - count
        guard holes > 1024, holes > count else { return }
        let live = (head..<tags.count).filter { tags[$0].queued }
        base += entries.count  // fresh positions, above every old one
        entries = live.map { entries[$0] }
        tags = live.map { tags[$0] }
        head = 0
        cursor = 0
        positionById = nil
        reindexKeys()
    }
}

/// The dead letters of the in-process stores, one per (delivery, sink).
public struct DeadLetterList: Sendable {
    private var letters: [String: DeadLetter] = [:]

    /// Stale keys allowed beyond the number of queued deliveries before the index by key is rebuilt.
    private let staleKeyAllowance: Int

    public init() {
        self.init(staleKeyAllowance: 1 << 17)
    }

    /// `staleKeyAllowance`: a fan-out's worth by default (tests make rebuilds frequent with a small one).
    init(staleKeyAllowance: Int) {
        self.staleKeyAllowance = staleKeyAllowance
    }

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
