import Foundation
import MatchcastCore

/// What a fan-out moves the same way for every activity of its match: what it last sent, when, with which stale
/// date, what it holds back, and when its record changed. An update fan-out moves 100,000 activities to one such
/// state and changes nothing else of them (`ActivityLifecycle.standing`).
public struct FanOutState: Sendable, Equatable {
    public var lastTimestamp: Int
    public var sent: ContentBox?
    /// Unix seconds, as stored.
    public var sentAt: Int?
    public var sentStaleDate: Int?
    public var held: ContentBox?
    /// Nanoseconds, as stored.
    public var heldStaleness: Int64?
    public var updatedAt: Date

    public init(
        lastTimestamp: Int, sent: ContentBox?, sentAt: Int?, sentStaleDate: Int?, held: ContentBox?,
        heldStaleness: Int64?, updatedAt: Date
    ) {
        self.lastTimestamp = lastTimestamp
        self.sent = sent
        self.sentAt = sentAt
        self.sentStaleDate = sentStaleDate
        self.held = held
        self.heldStaleness = heldStaleness
        self.updatedAt = updatedAt
    }

    /// The record's, as a store keeps it.
    public init(_ record: ActivityRecord) {
        self.init(record.lifecycle.stored, updatedAt: record.updatedAt)
    }

    /// Whether `record` is at this state: `FanOutState(record) == self`, compared in place.
    public func describes(_ record: ActivityRecord) -> Bool {
        updatedAt == record.updatedAt
            && record.lifecycle.storesSentState(
                lastTimestamp: lastTimestamp, sent: sent, sentAt: sentAt, sentStaleDate: sentStaleDate, held: held,
                heldStaleness: heldStaleness)
    }

    init(_ stored: ActivityLifecycle.Stored, updatedAt: Date) {
        self.init(
            lastTimestamp: stored.lastTimestamp, sent: stored.sent, sentAt: stored.sentAt,
            sentStaleDate: stored.sentStaleDate, held: stored.held, heldStaleness: stored.heldStaleness,
            updatedAt: updatedAt)
    }
}

/// One chunk of a fan-out, described to the store alongside its records: the sent state its activities move to, and
/// which of them change in nothing else.
///
/// A store may keep that state once per match instead of once per activity (SQLite does: `SQLiteStore+FanOutState`).
/// The records stay whole, so a store that ignores the description writes them as it always does.
///
/// The caller's promise, which such a store relies on: a fan-out walks its match's open activities in activity-id
/// order (UTF-8 byte order), chunk after chunk; once one chunk is described, every later chunk of the fan-out is too,
/// with the same state; and every open, started activity of the match whose id is in a described chunk's range
/// (`from` through `through`) is among its records, moved or not. Waiting activities never share a state: a
/// fan-out that leaves one waiting need not pass it.
public struct FanOutShare: Sendable {
    public var state: FanOutState
    /// Positions in the chunk's records of those whose only change is to `state`: open before and after, with the
    /// same device, environment and `ActivityLifecycle.standing`.
    public var moved: [Int]
    /// The lowest activity id of the chunk's range.
    public var from: String
    /// The highest activity id of the chunk's range; nil for a fan-out's last chunk, whose range runs to the end.
    public var through: String?

    public init(state: FanOutState, moved: [Int], from: String, through: String?) {
        self.state = state
        self.moved = moved
        self.from = from
        self.through = through
    }

    /// Whether `id` is in the range this chunk has covered when it is saved (everything, for the last chunk).
    func covers(_ id: String) -> Bool {
        guard let through else { return true }
        return !ActivitySlots.precedes(through, id)
    }

    /// The chunk `records` split as a store writes it: their match (one for all, or `.invalid`), the ids of those
    /// that only moved (each validated, as a written record is), and the others, to be written.
    func chunk(of records: [ActivityRecord]) throws(StoreError) -> (matchId: String, movedIds: [String], written: [ActivityRecord]) {
        let matchId = records.first?.matchId ?? ""
        guard records.allSatisfy({ $0.matchId == matchId }) else {
            throw .invalid("a fan-out chunk holds activities of more than one match")
        }
        var isMoved = [Bool](repeating: false, count: records.count)
        var movedIds: [String] = []
        movedIds.reserveCapacity(moved.count)
        for position in moved where records.indices.contains(position) && !isMoved[position] {
            try records[position].validate()
            isMoved[position] = true
            movedIds.append(records[position].activityId)
        }
        var written: [ActivityRecord] = []
        written.reserveCapacity(records.count - movedIds.count)
        for position in records.indices where !isMoved[position] { written.append(records[position]) }
        return (matchId, movedIds, written)
    }
}
