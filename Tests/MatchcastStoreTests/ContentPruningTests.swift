import Foundation
import GRDB
import Logging
import MatchcastCore
@testable import MatchcastStore
import PostgresNIO
import Testing

private typealias F = StoreFixture

/// The SQL stores keep a row per distinct content of a match (SQLite's `contentState`, PostgreSQL's `content_state`);
/// fan-outs prune the rows nothing refers to any more (`SQLiteContentPruning`; PostgreSQL's schema v12), and every
/// activity still reads back as it was saved, after a restart too.
@Suite("A match's old contents pruned as its fan-outs go on")
struct ContentPruningTests {
    static let matchId = "epl-mun-liv"
    /// Rows a match may have before its first pruning, on both stores.
    static let minimum = 64

    /// 300 goals, each fanned out as two chunks, to five activities that move together and one that holds each new
    /// content in its own row (its start sent, no update token yet). One is dismissed at the 40th goal, keeping what it
    /// showed then; one takes the 120th a second late (written whole, apart from the shared state); the holding one
    /// gives up at the 150th. After every first chunk the second chunk's activities must still read the state before
    /// it, as they would had the process died there. Returns the records as saved.
    static func threeHundredGoals(_ store: some MatchcastStore) async throws -> [ActivityRecord] {
        try await store.createDevice(F.device("dev-a"))
        var records = (1...5).map { F.activity("act-\($0)", token: "upd-\($0)") }
        records.append(ActivityRecord(deviceId: "dev-a", environment: .production, lifecycle: try F.startingLifecycle("act-6"), updatedAt: F.at(0)))
        try await store.saveActivities(records)
        var tracker = MatchTracker()
        for goal in 1...300 {
            let seconds = goal * 60
            let update = try #require(try tracker.ingest(F.football(.live, goal, 0, clock: "\(goal)'", seq: goal), pollInterval: .seconds(5)))
            if goal == 40 {
                _ = records[0].lifecycle.end(.dismissed, now: F.at(seconds - 1))
                records[0].updatedAt = F.at(seconds - 1)
                try await store.saveActivity(records[0])
            }
            // From then on nothing but the state refers to the latest contents.
            if goal == 150 {
                _ = records[5].lifecycle.end(.unfollowed, now: F.at(seconds - 1))
                records[5].updatedAt = F.at(seconds - 1)
                try await store.saveActivity(records[5])
            }
            let before = records
            var moved: [Int] = []
            for index in records.indices where records[index].isOpen {
                let late = goal == 120 && index == 1
                let quiet = records[index].lifecycle.quietState
                records[index] = F.moved(records[index], update, at: seconds + (late ? 1 : 0))
                if !late, index < 5, records[index].lifecycle.quietState == quiet { moved.append(index) }
            }
            // Two chunks, in id order: a pruning at this fan-out's opening must leave the previous state.
            let state = FanOutState(records[moved[0]])
            let open = records.indices.filter { records[$0].isOpen }
            let chunks = [open.filter { records[$0].activityId <= "act-3" }, open.filter { records[$0].activityId > "act-3" }]
            for (number, chunk) in chunks.enumerated() {
                let last = number == chunks.count - 1
                try await store.saveActivities(chunk.map { records[$0] }, enqueue: [], share: FanOutShare(
                    state: state, moved: chunk.indices.filter { moved.contains(chunk[$0]) },
                    from: records[chunk[0]].activityId, through: last ? nil : records[chunk[chunk.count - 1]].activityId))
                if !last {
                    let partway = records.indices.map { chunks[1].contains($0) ? before[$0] : records[$0] }
                    #expect(try await store.activities(matchId: Self.matchId) == partway, "goal \(goal)")
                }
            }
        }
        #expect(try await store.activities(matchId: Self.matchId) == records)
        #expect(records[0].phase == .ended && records[5].phase == .ended)
        #expect(records[0].lifecycle.sentContent != records[2].lifecycle.sentContent)
        return records
    }

    /// 300 distinct contents were written; what is left is what the activities and the state refer to, and at most
    /// the rows gathered since the last pruning.
    static func expectBounded(rows: Int) {
        #expect(rows < Self.minimum + 2)
        #expect(rows >= 3, "the ended activity's, the shared state's and the held content at least")
    }

    @Test("SQLite: 300 goals: the rows stay bounded, and activities that kept old contents (ended, written whole, holding) read back as saved")
    func sqlite() async throws {
        #expect(SQLiteContentPruning.minimum == Self.minimum)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        var store: SQLiteStore? = try SQLiteStore(path: path)
        let records = try await Self.threeHundredGoals(store!)
        // 300 fan-outs opened a state; the rows were counted only when a pruning could be due (each goal adds one
        // or two), not at each.
        let counts = store!.contentPruning.countsTaken
        #expect(counts > 0 && counts < 300 / 5, "counted \(counts) times")
        try store!.close()
        store = nil
        let queue = try DatabaseQueue(path: path)
        let rows = try await queue.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?", arguments: [Self.matchId]) ?? 0
        }
        Self.expectBounded(rows: rows)
        try queue.close()

        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.activities(matchId: Self.matchId) == records)
        #expect(try await reopened.activity(id: "act-1") == records[0])
        try reopened.close()
    }

    private static func postgresRows(_ store: PostgresStore, matchId: String = Self.matchId) async throws -> Int {
        try await store.withConnection("counting contents") { connection in
            try await Self.postgresRows(connection, logger: store.logger, matchId: matchId)
        }
    }

    private static func postgresRows(
        _ connection: PostgresConnection, logger: Logger, matchId: String = Self.matchId
    ) async throws -> Int {
        try await connection.query("SELECT count(*)::bigint FROM content_state WHERE match_id = \(matchId)", logger: logger)
            .collect(Int64.self).first.map(Int.init) ?? 0
    }

    @Test("PostgreSQL: 300 goals: the rows stay bounded, and activities that kept old contents read back as saved",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func postgres() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        var records: [ActivityRecord] = []
        do {
            try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { store in
                records = try await Self.threeHundredGoals(store)
                Self.expectBounded(rows: try await Self.postgresRows(store))
            }
        } catch {
            try? await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: true) { _ in }
            throw error
        }
        let saved = records
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: true) { (reopened: PostgresStore) async throws in
            #expect(try await reopened.activities(matchId: Self.matchId) == saved)
            #expect(try await reopened.activity(id: "act-1") == saved[0])
        }
    }

    /// Three activities that take every goal from `goals` together, each goal one fan-out of one chunk; returns the
    /// updates made.
    private static func goals(
        _ goals: ClosedRange<Int>, _ records: inout [ActivityRecord], _ tracker: inout MatchTracker,
        _ store: some MatchcastStore
    ) async throws -> [MatchUpdate] {
        var updates: [MatchUpdate] = []
        for goal in goals {
            let update = try Self.goal(goal, &tracker)
            updates.append(update)
            records = records.map { F.moved($0, update, at: goal * 60) }
            try await store.saveActivities(records, enqueue: [], share: Self.share(records))
        }
        return updates
    }

    private static func goal(_ goal: Int, _ tracker: inout MatchTracker) throws -> MatchUpdate {
        try #require(try tracker.ingest(F.football(.live, goal, 0, clock: "\(goal)'", seq: goal), pollInterval: .seconds(5)))
    }

    /// act-9, which took the 5th goal (`updates[4]`) and nothing since.
    private static func lagging(_ updates: [MatchUpdate]) -> ActivityRecord {
        F.moved(F.activity("act-9", token: "upd-9"), updates[4], at: 5 * 60 + 1)
    }

    /// Goals until the match has one row short of its first pruning: the next fan-out prunes.
    private static func goalsUntilDue(
        _ records: inout [ActivityRecord], _ tracker: inout MatchTracker, _ store: PostgresStore
    ) async throws -> [MatchUpdate] {
        var updates: [MatchUpdate] = []
        while try await Self.postgresRows(store) < Self.minimum - 1 {
            updates += try await Self.goals((updates.count + 1)...(updates.count + 1), &records, &tracker, store)
        }
        return updates
    }

    private static func share(_ records: [ActivityRecord]) -> FanOutShare {
        FanOutShare(state: FanOutState(records[0]), moved: Array(records.indices), from: records[0].activityId, through: nil)
    }

    private static func threeActivities(_ store: some MatchcastStore) async throws -> [ActivityRecord] {
        try await store.createDevice(F.device("dev-a"))
        let records = (1...3).map { F.activity("act-\($0)", token: "upd-\($0)") }
        try await store.saveActivities(records)
        return records
    }

    /// Two activities written whole, each with contents no other column and no shared state refers to: one holding
    /// back a content (`held`), one whose end is held with the match's final content (`final`, beside what it was
    /// last sent). Then 100 goals fanned out to three others, pruning as they go.
    static func keptColumns() -> [ActivityRecord] {
        func content(_ text: String) -> ContentBox {
            ContentBox(ContentState(status: "live", statusText: text, home: .init(name: "MUN", score: "0"),
                                    away: .init(name: "LIV", score: "0"), summary: text))
        }
        let stamp = Int(F.epoch)
        let holding = ActivityLifecycle(activityId: "act-0-holding", matchId: Self.matchId, stored: .init(
            phase: .active, updateToken: CompactToken("upd-holding"), lastTimestamp: stamp, sent: content("sent, then held back"),
            sentAt: stamp, sentStaleDate: stamp + 900, startedAt: stamp, held: content("held back only"),
            heldStaleness: 900_000_000_000, endHeld: false, final: nil, channelId: nil))
        let ending = ActivityLifecycle(activityId: "act-0-ending", matchId: Self.matchId, stored: .init(
            phase: .starting, updateToken: nil, lastTimestamp: stamp, sent: content("sent before the end"), sentAt: stamp,
            sentStaleDate: stamp + 900, startedAt: stamp, held: nil, heldStaleness: nil, endHeld: true,
            final: content("final only"), channelId: nil))
        return [holding, ending].map { ActivityRecord(deviceId: "dev-a", environment: .production, lifecycle: $0, updatedAt: F.at(1)) }
    }

    static func hundredGoalsBeside(_ kept: [ActivityRecord], _ store: some MatchcastStore) async throws {
        var records = try await Self.threeActivities(store)
        try await store.saveActivities(kept)
        var tracker = MatchTracker()
        _ = try await Self.goals(1...100, &records, &tracker, store)
        for record in kept { #expect(try await store.activity(id: record.activityId) == record) }
    }

    @Test("SQLite: an activity's held content and an ended one's final content are kept through prunings")
    func sqliteKeepsHeldAndFinal() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let kept = Self.keptColumns()
        let store = try SQLiteStore(path: path)
        try await Self.hundredGoalsBeside(kept, store)
        try store.close()
        let queue = try DatabaseQueue(path: path)
        let rows = try await queue.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?", arguments: [Self.matchId]) ?? 0
        }
        try queue.close()
        #expect(rows < Self.minimum, "pruned: 104 distinct contents were written")
        let reopened = try SQLiteStore(path: path)
        for record in kept { #expect(try await reopened.activity(id: record.activityId) == record) }
        try reopened.close()
    }

    @Test("PostgreSQL: an activity's held content and an ended one's final content are kept through prunings",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func postgresKeepsHeldAndFinal() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await Self.hundredGoalsBeside(Self.keptColumns(), store)
            #expect(try await Self.postgresRows(store) < Self.minimum, "pruned: 104 distinct contents were written")
        }
    }

    /// A save looks its contents' ids up before it writes the rows that refer to them. Here it looks one up that
    /// nothing refers to, then waits on a fan-out that prunes the match: it must not write the id the pruning freed
    /// (the contents' lock makes it wait before its look-up). `rowByRow`: the save has the activity twice, which
    /// `matchcast_save` refuses, so it is written record after record (`PostgresStore.contentIds`).
    @Test("PostgreSQL: a save beside a fan-out that prunes its match never refers to a deleted content",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage), arguments: [false, true])
    func aSaveBesideAPruning(rowByRow: Bool) async throws {
        try await PostgresTestServer.withFreshStore { store in
            var records = try await Self.threeActivities(store)
            var tracker = MatchTracker()
            let updates = try await Self.goalsUntilDue(&records, &tracker, store)
            // Its content is a row nothing refers to.
            let lagging = Self.lagging(updates)
            let goal = updates.count + 1
            let update = try Self.goal(goal, &tracker)
            let next = records.map { F.moved($0, update, at: goal * 60) }
            let batch = try PostgresActivityBatch(next, share: Self.share(next))
            let logger = store.logger, matchId = Self.matchId
            // The fan-out's transaction holds the locks a pruning chunk holds (its match's contents' lock taken for
            // itself: `matchcast_save`'s try, v14), then waits for the save.
            let left = try await store.withConnection("a fan-out that prunes") { connection in
                try await connection.query("BEGIN", logger: logger).consume()
                do {
                    try await connection.query("SELECT pg_advisory_xact_lock(matchcast_contents_key(\(matchId)))", logger: logger).consume()
                    try await connection.query("SELECT 1 FROM fan_out_state WHERE match_id = \(matchId) FOR UPDATE", logger: logger).consume()
                    let pid: Int32 = try await connection.query("SELECT pg_backend_pid()", logger: logger).collect(Int32.self).first ?? 0
                    let save = Task {
                        if rowByRow {
                            try await store.saveActivities([F.activity("act-9", token: "upd-9"), lagging])
                        } else {
                            try await store.saveActivity(lagging)
                        }
                    }
                    var waiting: Int64 = 0
                    for _ in 0..<600 where waiting == 0 {
                        waiting = try await connection.query(
                            "SELECT count(*)::bigint FROM pg_locks WHERE NOT granted AND \(pid) = ANY(pg_blocking_pids(pid))",
                            logger: logger
                        ).collect(Int64.self).first ?? 0
                        if waiting == 0 { try await Task.sleep(for: .milliseconds(50)) }
                    }
                    #expect(waiting > 0, "the save waits on the fan-out")
                    do {
                        try await PostgresStore.save(batch, nil, fence: nil, connection, logger: logger)
                        let left = try await Self.postgresRows(connection, logger: logger)
                        try await connection.query("COMMIT", logger: logger).consume()
                        try await save.value
                        return left
                    } catch {
                        save.cancel()
                        throw error
                    }
                } catch {
                    try? await connection.query("ROLLBACK", logger: logger).consume()
                    throw error
                }
            }
            #expect(left < Self.minimum, "the fan-out pruned the match's contents")
            #expect(try await store.activity(id: "act-9") == lagging)
            #expect(try await store.activities(matchId: Self.matchId) == next + [lagging])
        }
    }

    /// A fan-out chunk shares its match's contents' lock like every other save (v14): one whose pruning is due while
    /// another save holds the lock neither waits for it nor prunes, and a later fan-out prunes. Before v14 the chunk
    /// took the lock for itself and waited.
    @Test("PostgreSQL: a fan-out due to prune beside a save in flight goes on without waiting, and a later one prunes",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func aPruningLeavesWayToASave() async throws {
        try await PostgresTestServer.withFreshStore { store in
            var records = try await Self.threeActivities(store)
            var tracker = MatchTracker()
            let updates = try await Self.goalsUntilDue(&records, &tracker, store)
            let logger = store.logger, matchId = Self.matchId
            let next = updates.count + 1
            let (sharing, tracking) = (records, tracker)
            let (rows, fanOut) = try await store.withConnection("a save in flight") { connection in
                try await connection.query("BEGIN", logger: logger).consume()
                try await connection.query(
                    "SELECT pg_advisory_xact_lock_shared(matchcast_contents_key(\(matchId)))", logger: logger).consume()
                let fanOut = Task {
                    var records = sharing, tracker = tracking
                    _ = try await Self.goals(next...next, &records, &tracker, store)
                    return (records, tracker)
                }
                // The fan-out's new content is its commit: the match had one row short of a pruning.
                var rows = 0
                for _ in 0..<200 where rows < Self.minimum {
                    rows = try await Self.postgresRows(connection, logger: logger)
                    if rows < Self.minimum { try await Task.sleep(for: .milliseconds(50)) }
                }
                try await connection.query("COMMIT", logger: logger).consume()
                return (rows, fanOut)
            }
            (records, tracker) = try await fanOut.value
            #expect(rows >= Self.minimum, "the fan-out committed while the save held the lock")
            #expect(rows == Self.minimum, "and left the pruning to a later fan-out")
            let later = updates.count + 2
            _ = try await Self.goals(later...later, &records, &tracker, store)
            #expect(try await Self.postgresRows(store) < Self.minimum, "the next fan-out prunes")
            #expect(try await store.activities(matchId: Self.matchId) == records)
        }
    }

    /// A read of activities is two statements: the activities, then the contents they refer to. Between them, act-9
    /// catches up and the next fan-out prunes the content it referred to when it was read: the read reads again.
    @Test("PostgreSQL: a read whose contents a fan-out pruned between its two statements reads again",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func aReadBesideAPruning() async throws {
        try await PostgresTestServer.withFreshStore { store in
            var records = try await Self.threeActivities(store)
            var tracker = MatchTracker()
            let updates = try await Self.goalsUntilDue(&records, &tracker, store)
            let lagging = Self.lagging(updates)
            try await store.saveActivity(lagging)
            let caughtUp = F.moved(lagging, updates[updates.count - 1], at: updates.count * 60 + 1)
            let goal = updates.count + 1
            let update = try Self.goal(goal, &tracker)
            let next = (records + [caughtUp]).map { F.moved($0, update, at: goal * 60) }
            let attempts = try await store.activities(
                "reading a match's activities", "WHERE match_id = $1 ORDER BY id", Self.matchId
            ) { attempt in
                guard attempt == 1 else { return }
                try await store.saveActivity(caughtUp)
                try await store.saveActivities(next, enqueue: [], share: Self.share(next))
            }
            #expect(try await Self.postgresRows(store) < Self.minimum, "the fan-out pruned the match's contents")
            #expect(attempts == next)
        }
    }

    /// Fan-out chunks of a few activities with their deliveries go to PostgreSQL together, several matches in one
    /// statement (`PostgresStore.save(_ given:…)`), which takes the contents' locks before its chunks' locks: the
    /// chunks that prune do it there, and every one lands.
    @Test("PostgreSQL: fan-out chunks of several matches, sent together in one statement, prune there",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func prunesInAGroupedSave() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: .milliseconds(50)) { store in
            try await store.createDevice(F.device("dev-a"))
            let matches = (0..<4).map { "m-\($0)" }
            var records = matches.map { F.activity("act-\($0)", match: $0, token: "tok-\($0)") }
            try await store.saveActivities(records)
            var trackers = matches.map { _ in MatchTracker() }
            for goal in 1...70 {
                var chunks: [(ActivityRecord, Delivery)] = []
                for index in matches.indices {
                    let snapshot = F.football(.live, goal, 0, clock: "\(goal)'", seq: goal, id: matches[index])
                    let update = try #require(try trackers[index].ingest(snapshot, pollInterval: .seconds(5)))
                    records[index] = F.moved(records[index], update, at: goal * 60)
                    var delivery = Outbox.delivery(
                        "dlv-\(matches[index])-\(goal)", activity: records[index].activityId, .update, timestamp: 1_776_784_329 + goal)
                    delivery.matchId = matches[index]
                    chunks.append((records[index], delivery))
                }
                let outcomes = await PostgresGroupedWritesTests.concurrently(chunks) { record, delivery in
                    try await store.saveActivities([record], enqueue: [delivery], share: Self.share([record]))
                }
                #expect(outcomes == Array(repeating: "ok", count: matches.count), "goal \(goal)")
            }
            #expect(store.saves.groupedCalls >= 1)
            for (index, match) in matches.enumerated() {
                #expect(try await Self.postgresRows(store, matchId: match) < Self.minimum, "\(match) pruned")
                #expect(try await store.activities(matchId: match) == [records[index]])
            }
        }
    }

    @Test("PostgreSQL: a database v11 wrote, its contents never pruned, is pruned at its first fan-out after v12, the fan-out's own contents kept",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func upgradeFromV11() async throws {
        let store = try PostgresStore(configuration: try PostgresTestServer.freshConfiguration())
        do {
            try await withStoreRunning(store) {
                try await store.migrate(upTo: "v11")
                var records = try await Self.threeActivities(store)
                var tracker = MatchTracker()
                let updates = try await Self.goals(1...100, &records, &tracker, store)
                #expect(try await Self.postgresRows(store) >= 100, "one row per goal, none pruned")
                try await store.migrate()
                #expect(try await store.activities(matchId: Self.matchId) == records)
                // The next fan-out prunes. Its chunk writes act-9 whole, at the 5th goal's content, which nothing
                // referred to before it: the pruning keeps the chunk's own contents.
                let update = try Self.goal(101, &tracker)
                records = records.map { F.moved($0, update, at: 101 * 60) }
                let lagging = Self.lagging(updates)
                try await store.saveActivities(records + [lagging], enqueue: [], share: FanOutShare(
                    state: FanOutState(records[0]), moved: Array(records.indices), from: records[0].activityId, through: nil))
                #expect(try await Self.postgresRows(store) < Self.minimum)
                #expect(try await store.activities(matchId: Self.matchId) == records + [lagging])
            }
        } catch {
            try? await store.dropSchema()
            throw error
        }
        try await store.dropSchema()
    }

}
