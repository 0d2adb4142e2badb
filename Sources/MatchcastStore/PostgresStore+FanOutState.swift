import Foundation
import MatchcastCore
import PostgresNIO

// A fan-out chunk's sent state kept once for its match in `fan_out_state` (schema v8, `PostgresStore+MigrationV8`),
// as SQLite keeps it (`SQLiteStore+FanOutState`): an update that moves 100,000 activities to one state writes one
// row per chunk, not 1,024. The chunk is still one `matchcast_save`, so one round trip and one transaction with its
// lease fence and its deliveries: a crash part-way leaves the chunks saved at the new state, with their deliveries
// queued, and the others at the state before.

extension PostgresStore {
    public var keepsFanOutState: Bool { true }

    /// Each save is a round trip and a commit that waits for the WAL's flush (`synchronous_commit` on).
    public var savesChunksTogether: Bool { true }

    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, share: share, match: nil)
    }

    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) async throws(StoreError) {
        try await saveActivities(
            records, enqueue: deliveries, fence: nil, share: records.isEmpty ? nil : share, match: match)
    }
}

/// A fan-out chunk's description as `matchcast_save`'s last parameters (`s_*`): the match, the ids of the records
/// that only moved (not sent otherwise), the state, and the chunk's id range.
struct PostgresFanOutShare: Sendable {
    let matchId: String
    let movedIds: [String]
    let state: FanOutState
    /// `state.sent` and `state.held` as positions in the batch's contents, from 1 (0: none).
    let sent: Int32
    let held: Int32
    let from: String
    let through: String?

    /// Adds the state's contents to `contents`.
    init(
        _ share: FanOutShare, matchId: String, movedIds: [String], contents: inout StoredContents
    ) throws(StoreError) {
        self.matchId = matchId
        self.movedIds = movedIds
        state = share.state
        sent = try contents.entry(share.state.sent, matchId) + 1
        held = try contents.entry(share.state.held, matchId) + 1
        from = share.from
        through = share.through
    }

    /// Parameters 37 to 47.
    func bind(into bindings: inout PostgresBindings) {
        bindings.append(matchId)
        bindings.append(PostgresTextArray(movedIds))
        bindings.append(Int64(state.lastTimestamp))
        bindings.append(sent)
        bindings.append(state.sentAt.map(Int64.init))
        bindings.append(state.sentStaleDate.map(Int64.init))
        bindings.append(held)
        bindings.append(state.heldStaleness)
        bindings.append(state.updatedAt.storedPrecision)
        bindings.append(from)
        bindings.append(through)
    }

    /// The same parameters for a save that is not a fan-out chunk.
    static func bindNone(into bindings: inout PostgresBindings) {
        bindings.append(String?.none)
        bindings.append([String]())
        bindings.append(Int64?.none)
        bindings.append(Int32?.none)
        bindings.append(Int64?.none)
        bindings.append(Int64?.none)
        bindings.append(Int32?.none)
        bindings.append(Int64?.none)
        bindings.append(Date?.none)
        bindings.append(String?.none)
        bindings.append(String?.none)
    }
}
