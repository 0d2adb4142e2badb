import Foundation
import GRDB
import MatchcastCore
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture

/// `contentState` keeps a row per distinct content of a match; fan-outs prune the rows nothing refers to any more
/// (`SQLiteContentPruning`), and every activity still reads back as it was saved, after a restart too.
@Suite("SQLite: a match's old contents pruned as its fan-outs go on")
struct SQLiteContentPruningTests {
    static let matchId = "epl-mun-liv"

    /// `record` after `update` at `seconds`, as a fan-out leaves it.
    private static func moved(_ record: ActivityRecord, _ update: MatchUpdate, at seconds: Int) -> ActivityRecord {
        var record = record
        _ = record.lifecycle.matchChanged(update, now: F.at(seconds), policy: F.policy)
        record.updatedAt = F.at(seconds)
        return record
    }

    private static func contentRows(_ path: String) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?", arguments: [matchId]) ?? 0 }
    }

    @Test("300 goals: the rows stay bounded, and activities that kept old contents (ended, written whole, holding) read back as saved")
    func oldContentsGoNothingReferredToIsLost() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        var store: SQLiteStore? = try SQLiteStore(path: path)
        try await store!.createDevice(F.device("dev-a"))
        // Five active activities that move together; one starting (its start sent, no update token yet), which
        // holds each new content in its own row until it ends.
        var records = (1...5).map { F.activity("act-\($0)", token: "upd-\($0)") }
        records.append(ActivityRecord(deviceId: "dev-a", environment: .production, lifecycle: try F.startingLifecycle("act-6"), updatedAt: F.at(0)))
        try await store!.saveActivities(records)
        var tracker = MatchTracker()
        var endedAt: [Int: Int] = [:]
        for goal in 1...300 {
            let seconds = goal * 60
            let update = try #require(try tracker.ingest(F.football(.live, goal, 0, clock: "\(goal)'", seq: goal), pollInterval: .seconds(5)))
            // act-1 is dismissed at the 40th goal, keeping what it showed then; act-2 takes the 120th a second late
            // (written whole, apart from the shared state), then moves with the others again.
            if goal == 40 {
                _ = records[0].lifecycle.end(.dismissed, now: F.at(seconds - 1))
                records[0].updatedAt = F.at(seconds - 1)
                try await store!.saveActivity(records[0])
                endedAt[0] = goal
            }
            // The starting one gives up at the 150th: from then on nothing but the state refers to the latest contents.
            if goal == 150 {
                _ = records[5].lifecycle.end(.unfollowed, now: F.at(seconds - 1))
                records[5].updatedAt = F.at(seconds - 1)
                try await store!.saveActivity(records[5])
                endedAt[5] = goal
            }
            let before = records
            var moved: [Int] = []
            for index in records.indices where records[index].isOpen {
                let late = goal == 120 && index == 1
                let quiet = records[index].lifecycle.quietState
                records[index] = Self.moved(records[index], update, at: seconds + (late ? 1 : 0))
                if !late, index < 5, records[index].lifecycle.quietState == quiet { moved.append(index) }
            }
            // Two chunks, in id order. After the first, the second's activities still read the state before it
            // (the previous one of `fanOutState`, had the process died there): a pruning at this fan-out's opening
            // must leave it.
            let state = FanOutState(records[moved[0]])
            let open = records.indices.filter { records[$0].isOpen }
            let chunks = [open.filter { records[$0].activityId <= "act-3" }, open.filter { records[$0].activityId > "act-3" }]
            for (number, chunk) in chunks.enumerated() {
                let last = number == chunks.count - 1
                try await store!.saveActivities(chunk.map { records[$0] }, enqueue: [], share: FanOutShare(
                    state: state, moved: chunk.indices.filter { moved.contains(chunk[$0]) },
                    from: records[chunk[0]].activityId, through: last ? nil : records[chunk[chunk.count - 1]].activityId))
                if !last {
                    let partway = records.indices.map { chunks[1].contains($0) ? before[$0] : records[$0] }
                    #expect(try await store!.activities(matchId: Self.matchId) == partway, "goal \(goal)")
                }
            }
        }
        #expect(endedAt[0] == 40)
        #expect(try await store!.activities(matchId: Self.matchId) == records)
        let rows = try Self.contentRows(path)
        // 300 distinct contents were written; what is left is what the activities and the state refer to, and at most
        // the rows gathered since the last pruning.
        #expect(rows < SQLiteContentPruning.minimum + 2)
        #expect(rows >= 3, "the ended activity's, the shared state's and the held content at least")
        try store!.close()
        store = nil

        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.activities(matchId: Self.matchId) == records)
        #expect(try await reopened.activity(id: "act-1") == records[0])
        #expect(records[0].lifecycle.sentContent != records[2].lifecycle.sentContent)
        #expect(endedAt[5] == 150 && records[5].phase == .ended)
        try reopened.close()
    }
}
