import Foundation
import MatchcastCore
@testable import MatchcastStore
import MatchcastTesting
import PostgresNIO
import Testing

private typealias F = StoreFixture

/// What PostgreSQL's shared fan-out state (schema v8) keeps in its own rows, beyond what reads back
/// (`FanOutShareContractTests` runs on it too): membership, and an older build's writes and deletes through v7's
/// function and the `activity` view.
@Suite("PostgreSQL fan-out state", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresFanOutStateTests {
    private static func members(_ store: PostgresStore) async throws -> [String: Bool] {
        let rows = try await store.withConnection("reading membership") { connection in
            try await connection.query("SELECT id, shared FROM activity_row", logger: store.logger)
                .collect((String, Bool).self)
        }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.1) })
    }

    /// The token's write keeps the activity in the match's shared state (it reads the same there, with a later update
    /// date of its own), so the next fan-out has nothing to write for it.
    @Test func keepsAnActivityThatTookATokenInTheSharedState() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await FanOutShareContractTests.tokenBetweenFanOuts(store) { () async throws in
                #expect(try await Self.members(store) == ["act-1": true, "act-2": true, "act-3": true])
            }
            #expect(try await Self.members(store) == ["act-1": true, "act-2": true, "act-3": true])
        }
    }

    /// A fan-out at a time whose milliseconds a Double holds a hair low (PostgresNIO sends microseconds truncated, so
    /// .567 arrives as .566999): its later chunks still find the state its first chunk opened, so the first chunk's
    /// activities stay members instead of being taken out and the state opened again at every chunk.
    @Test func aMillisecondFanOutTimeOpensTheStateOnce() async throws {
        // As PostgresNIO encodes a date: microseconds since 2000-01-01, truncated.
        let epoch2000 = Date(timeIntervalSince1970: 946_684_800)
        let moment = try #require((0..<1000).lazy.map { Date(timeIntervalSince1970: (1_764_151_234_000.0 + Double($0)) / 1000) }
            .first { date in
                let micros = date.timeIntervalSince(epoch2000) * 1_000_000
                return Int64(micros) != Int64(micros.rounded())
            })
        try await PostgresTestServer.withFreshStore { store in
            try await store.createDevice(F.device("dev-a"))
            let initial = (1...6).map { F.activity("act-\($0)", token: "upd-\($0)") }
            try await store.saveActivities(initial)
            var tracker = MatchTracker()
            let goal = try #require(
                try tracker.ingest(F.football(.live, 1, 0, clock: "10'", seq: 10), pollInterval: .seconds(5)))
            let moved = initial.map { record in
                var record = record
                _ = record.lifecycle.matchChanged(goal, now: moment, policy: F.policy)
                record.updatedAt = moment
                return record
            }
            let state = FanOutState(moved[0])
            try await store.saveActivities(
                Array(moved[0..<3]), enqueue: [],
                share: FanOutShare(state: state, moved: [0, 1, 2], from: "act-1", through: "act-3"))
            try await store.saveActivities(
                Array(moved[3..<6]), enqueue: [],
                share: FanOutShare(state: state, moved: [0, 1, 2], from: "act-4", through: nil))
            #expect(try await Self.members(store) == Dictionary(uniqueKeysWithValues: moved.map { ($0.activityId, true) }))
            let read = try await store.activities(matchId: "epl-mun-liv")
            #expect(read.map(\.lifecycle.stored.lastTimestamp) == moved.map(\.lifecycle.stored.lastTimestamp))
        }
    }

    /// An older build (v7's `matchcast_save` signature, reads and deletes through `activity`) keeps working on v8:
    /// what it writes whole leaves the shared state when it reads differently, and its reads see the shared state.
    @Test func anOlderBuildsWritesAndReadsStayRight() async throws {
        try await PostgresTestServer.withFreshStore { store in
            let id = try await FanOutShareContractTests.tokenBetweenFanOuts(store)
            let shared = try #require(try await store.activity(id: id))
            #expect(try await Self.members(store)[id] == true)
            // v7's call as the older build makes it: the activity ended, nothing else of it bound.
            try await store.withConnection("saving as v7") { connection in
                try await connection.query(
                    """
                    SELECT matchcast_save(NULL::text, '{}'::text[], '{}'::bigint[], '{}'::text[], '{}'::text[],
                        ARRAY[\(id)]::text[], ARRAY['dev-a'], ARRAY['epl-mun-liv'], ARRAY['production'], ARRAY['ended'],
                        ARRAY['']::text[], ARRAY[7]::bigint[], ARRAY[0]::integer[], ARRAY[\(PostgresActivityBatch.none)]::bigint[],
                        ARRAY[\(PostgresActivityBatch.none)]::bigint[], ARRAY[\(PostgresActivityBatch.none)]::bigint[],
                        ARRAY[0]::integer[], ARRAY[\(PostgresActivityBatch.none)]::bigint[], ARRAY[false], ARRAY[0]::integer[],
                        ARRAY['']::text[], ARRAY[\(F.at(500))]::timestamptz[], NULL::text, NULL::text, NULL::text,
                        '{}'::text[], '{}'::text[], '{}'::integer[], '{}'::bigint[], '{}'::bytea[], '{}'::text[],
                        '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::integer[])
                    """,
                    logger: store.logger
                ).consume()
            }
            #expect(try await Self.members(store)[id] == false)
            let ended = try #require(try await store.activity(id: id))
            #expect(ended.phase == .ended && ended.lifecycle.stored.lastTimestamp == 7 && ended.updatedAt == F.at(500))
            #expect(ended.lifecycle.stored.sent == nil && shared.lifecycle.stored.sent != nil)
            // The others still read the shared state, as the older build reads them (through the view).
            let others = try await store.activities(matchId: "epl-mun-liv").filter { $0.activityId != id }
            #expect(others.allSatisfy { $0.lifecycle.stored.lastTimestamp == shared.lifecycle.stored.lastTimestamp })
            try await store.withConnection("deleting as v7") { connection in
                try await connection.query("DELETE FROM activity WHERE id = \(id) RETURNING 1", logger: store.logger).consume()
            }
            #expect(try await store.activity(id: id) == nil)
        }
    }
}
