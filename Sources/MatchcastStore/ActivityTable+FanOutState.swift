import Foundation
import MatchcastCore

/// The sent state a fan-out's activities share, kept once per match by the in-memory store, as SQLite keeps it in its
/// `fanOutState` table (`SQLiteStore+FanOutState.swift`, which says why it is safe): an update that moves a million
/// activities to one state changes one value and marks the activities that were not members yet, instead of writing
/// a million records.
///
/// A member activity's record keeps everything but its sent state; it reads `current` if its id is at most
/// `boundary` (or `boundary` is nil), `previous` otherwise. A fan-out opens a new current state at its first
/// described chunk (boundary "": every member at the previous one), and each chunk saved moves the boundary past its
/// range. The state is exact (`ActivityLifecycle.SentState`, the records' own dates), so a record reads back exactly
/// as it was saved.
struct MatchSentState: Sendable {
    struct State: Sendable, Equatable {
        var sent: ActivityLifecycle.SentState
        var updatedAt: Date

        init(_ record: borrowing ActivityRecord) {
            sent = record.lifecycle.sentState
            updatedAt = record.updatedAt
        }
    }

    var current: State
    var previous: State
    var boundary: String?
    /// No member has a lower id (nil: no member). A bound: members that leave do not raise it.
    var lowestMember: String?

    func state(of id: String) -> State {
        guard let boundary, ActivitySlots.precedes(boundary, id) else { return current }
        return previous
    }

    mutating func noteMember(_ id: String) {
        if let lowest = lowestMember, !ActivitySlots.precedes(id, lowest) { return }
        lowestMember = id
    }
}

extension ActivityTable {
    /// The record in `slot` as it reads: a member's with its match's shared sent state.
    func record(at slot: Int) -> ActivityRecord? {
        guard var record = slots[slot] else { return nil }
        guard isMember[slot], let shared = sharedByMatch[record.matchId] else { return record }
        Self.take(shared.state(of: record.activityId), into: &record)
        return record
    }

    /// Saves a fan-out chunk described by `share`, all or nothing: its moved records at one exact state join their
    /// match's shared state (nothing of theirs is written), the others are written whole. The chunk's range must hold
    /// every open activity of the match in it (the caller's promise, `FanOutShare`).
    mutating func save(_ records: [ActivityRecord], share: FanOutShare, devices: DeviceTable) throws(StoreError) {
        guard let matchId = records.first?.matchId else { return }
        var isMoved = [Bool](repeating: false, count: records.count)
        var reference: MatchSentState.State?
        var movedSlots: [Int] = []
        movedSlots.reserveCapacity(share.moved.count)
        for position in share.moved where records.indices.contains(position) && !isMoved[position] {
            try records[position].validate()
            // Only an open, started activity the store holds moves; any other (and one at another state than the
            // chunk's first moved record) is written whole. The stored record is not read: that its device, token and
            // standing are unchanged is the caller's promise, as SQLite takes it, and reading a million records in id
            // order, stored in the order they came, is a cache miss each.
            guard records[position].lifecycle.phase != .ended, records[position].lifecycle.phase != .waiting,
                  let slot = slots.slot(id: records[position].activityId)
            else { continue }
            let state = MatchSentState.State(records[position])
            if reference == nil { reference = state }
            guard state == reference else { continue }
            isMoved[position] = true
            movedSlots.append(slot)
        }
        for index in records.indices where records[index].matchId != matchId {
            throw .invalid("a fan-out chunk holds activities of more than one match")
        }
        var written: [ActivityRecord] = []
        written.reserveCapacity(records.count - movedSlots.count)
        for position in records.indices where !isMoved[position] { written.append(records[position]) }
        let open = { (table: inout ActivityTable) in
            if let reference { table.open(reference, matchId: matchId, from: share.from) }
        }
        if written.isEmpty { open(&self) } else { try save(written, devices: devices, beforeWriting: open) }
        guard reference != nil else { return }
        for slot in movedSlots where !isMember[slot] {
            isMember[slot] = true
            if let id = slots[slot]?.activityId { sharedByMatch[matchId]?.noteMember(id) }
        }
        if let boundary = sharedByMatch[matchId]?.boundary, let through = share.through {
            if ActivitySlots.precedes(boundary, through) { sharedByMatch[matchId]?.boundary = through }
        } else {
            sharedByMatch[matchId]?.boundary = nil
        }
    }

    /// Makes `state` the match's current shared state, unless it already is (a later chunk of the same fan-out).
    /// Members the new state must not move keep theirs in their own records first: those a fan-out left part-way
    /// past its boundary (at the previous state), and those before this chunk's range (at the current one).
    private mutating func open(_ state: MatchSentState.State, matchId: String, from: String) {
        guard var shared = sharedByMatch[matchId] else {
            sharedByMatch[matchId] = MatchSentState(current: state, previous: state, boundary: "", lowestMember: nil)
            return
        }
        if shared.current == state { return }
        let before = shared.lowestMember.map { ActivitySlots.precedes($0, from) } ?? false
        if shared.boundary != nil || before {
            // Only after a fan-out that failed part-way, or one whose first chunks changed nothing.
            shared.lowestMember = nil
            for slot in slotsByMatch[matchId]?.slots ?? [] where isMember[slot] {
                guard let id = slots[slot]?.activityId else { continue }
                if let boundary = shared.boundary, ActivitySlots.precedes(boundary, id) {
                    detach(slot, at: shared.previous)
                } else if ActivitySlots.precedes(id, from) {
                    detach(slot, at: shared.current)
                } else {
                    shared.noteMember(id)
                }
            }
        }
        shared.previous = shared.current
        shared.current = state
        shared.boundary = ""
        sharedByMatch[matchId] = shared
    }

    /// The member in `slot` leaves its match's shared state, keeping `state` in its own record.
    private mutating func detach(_ slot: Int, at state: MatchSentState.State) {
        slots.update(at: slot) { Self.take(state, into: &$0) }
        isMember[slot] = false
    }

    /// A member's record as it reads: the shared sent state, and the later of its own update date and the state's.
    private static func take(_ state: MatchSentState.State, into record: inout ActivityRecord) {
        record.lifecycle.sentState = state.sent
        if state.updatedAt > record.updatedAt { record.updatedAt = state.updatedAt }
    }
}
