import Foundation
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

/// A change's match row saved with its fan-out's first chunk (`saveActivities(_:enqueue:share:match:)`): both are
/// saved, or neither, on every store, described as a fan-out chunk or written whole.
@Suite("Store contract: a match's row saved with a fan-out chunk")
struct MatchWithChunkContractTests {
    /// Three active activities of the match on dev-a, saved; the tracker has seen the kick-off.
    private static func seeded(_ store: any MatchcastStore) async throws -> ([ActivityRecord], MatchTracker) {
        try await store.createDevice(F.device("dev-a"))
        let records = (1...3).map { F.activity("act-\($0)", token: "upd-\($0)") }
        try await store.saveActivities(records)
        var tracker = MatchTracker()
        _ = try tracker.ingest(F.football(.live, 0, 0, clock: "1'", seq: 1), pollInterval: .seconds(5))
        let kickOff = MatchRecord(snapshot: F.football(.live, 0, 0, clock: "1'", seq: 1), updatedAt: F.at(1))
        try await store.saveMatch(kickOff)
        return (records, tracker)
    }

    /// The goal's match row and each record moved to the goal, with one update queued per record.
    private static func goal(_ records: [ActivityRecord], _ tracker: inout MatchTracker)
        throws -> (MatchRecord, [ActivityRecord], [Delivery]) {
        let snapshot = F.football(.live, 1, 0, clock: "31'", seq: 2)
        let update = try #require(try tracker.ingest(snapshot, pollInterval: .seconds(5)))
        let moved = records.map { F.moved($0, update, at: 60) }
        let deliveries = moved.map { Outbox.delivery("dlv-\($0.activityId)", activity: $0.activityId, .update) }
        return (MatchRecord(snapshot: snapshot, updatedAt: F.at(60)), moved, deliveries)
    }

    enum Form: String, CaseIterable, CustomTestStringConvertible {
        /// Described to the store (`FanOutShare`), as a fan-out's chunks are.
        case described
        /// Written whole.
        case whole
        var testDescription: String { rawValue }
    }

    /// Described: every record moved but those `whole` names, which are written whole.
    private static func share(_ form: Form, _ records: [ActivityRecord], whole: Set<Int> = []) -> FanOutShare? {
        guard form == .described else { return nil }
        return FanOutShare(
            state: FanOutState(records[0]), moved: records.indices.filter { !whole.contains($0) },
            from: records[0].activityId, through: nil)
    }

    @Test("saved together: the match's row, the records and their deliveries",
          arguments: StoreKind.allCases, Form.allCases)
    func savedTogether(_ kind: StoreKind, _ form: Form) async throws {
        try await kind.withStore { store in
            var (records, tracker) = try await Self.seeded(store)
            let (match, moved, deliveries) = try Self.goal(records, &tracker)
            try await store.saveActivities(moved, enqueue: deliveries, share: Self.share(form, moved), match: match)
            #expect(try await store.match(id: match.matchId) == match)
            #expect(try await store.activities(matchId: match.matchId) == moved)
            #expect(try await store.queuedDeliveries(limit: 10).map(\.id) == deliveries.map(\.id))
            records = moved
            // With nothing else to save, the match's row alone.
            let later = MatchRecord(snapshot: F.football(.live, 1, 0, clock: "32'", seq: 3), updatedAt: F.at(120))
            try await store.saveActivities([], enqueue: [], share: nil, match: later)
            #expect(try await store.match(id: match.matchId) == later)
            #expect(try await store.activities(matchId: match.matchId) == records)
        }
    }

    @Test("refused together: a chunk the store refuses leaves the match's row as it was",
          arguments: StoreKind.allCases, Form.allCases)
    func refusedTogether(_ kind: StoreKind, _ form: Form) async throws {
        try await kind.withStore { store in
            let (records, tracker) = try await Self.seeded(store)
            let kickOff = try #require(try await store.match(id: "epl-mun-liv"))
            var goalTracker = tracker
            let (match, moved, deliveries) = try Self.goal(records, &goalTracker)
            // The last record, written whole, names a device the store does not have: the whole save is refused.
            var refused = moved
            refused[2] = ActivityRecord(
                deviceId: "dev-gone", environment: .production, lifecycle: refused[2].lifecycle, updatedAt: F.at(60))
            let share = Self.share(form, refused, whole: [2])
            await #expect(throws: StoreError.notFound) {
                try await store.saveActivities(refused, enqueue: deliveries, share: share, match: match)
            }
            #expect(try await store.match(id: "epl-mun-liv") == kickOff, "the match's row is not saved without its chunk")
            #expect(try await store.activities(matchId: "epl-mun-liv") == records)
            #expect(try await store.queuedDeliveryCount() == 0)

            // A match row that contradicts its snapshot: nothing is saved either.
            let contradicting = MatchRecord(matchId: "other", snapshot: match.snapshot, updatedAt: F.at(60))
            await #expect(throws: StoreError.invalid) {
                try await store.saveActivities(moved, enqueue: deliveries, share: Self.share(form, moved), match: contradicting)
            }
            #expect(try await store.activities(matchId: "epl-mun-liv") == records)
            #expect(try await store.queuedDeliveryCount() == 0)
        }
    }
}
