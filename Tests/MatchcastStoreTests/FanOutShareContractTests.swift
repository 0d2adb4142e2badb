import Foundation
import GRDB
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

/// A fan-out chunk described by a `FanOutShare` reads back exactly as its records, on every store; SQLite keeps the
/// shared sent state once per match, so these cover what that must get right: chunks saved and chunks never saved (a
/// crash), a new fan-out over one left part-way, records of a chunk that do not move with it, chunks before the
/// first described one, and writes outside a fan-out.
@Suite("Store contract: fan-out chunks sharing a sent state")
struct FanOutShareContractTests {
    /// Six active activities of one match, each on its own token.
    private static func activities() -> [ActivityRecord] {
        (1...6).map { F.activity("act-\($0)", token: "upd-\($0)") }
    }

    /// `record` after the update, as a fan-out at `seconds` leaves it.
    private static func moved(_ record: ActivityRecord, _ update: MatchUpdate, at seconds: Int) throws -> ActivityRecord {
        var record = record
        let before = record.lifecycle.quietState
        let actions = F.move(&record, update, at: seconds)
        try #require(!actions.isEmpty && record.lifecycle.quietState == before, "the update is sent, nothing held")
        return record
    }

    private static func share(_ records: [ActivityRecord], moved: [Int], last: Bool) -> FanOutShare {
        FanOutShare(
            state: FanOutState(records[moved[0]]), moved: moved,
            from: records.first!.activityId, through: last ? nil : records.last!.activityId)
    }

    @Test(arguments: StoreKind.allCases)
    func chunksReadBackAsSavedThroughCrashesAndRestarts(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let initial = Self.activities()
            // Waiting for its start: in the range of every last chunk below, never passed, never moved.
            let waiting = F.activity("act-7")
            try await store.saveActivities(initial + [waiting])
            var tracker = MatchTracker()
            func update(_ goals: Int, seq: Int) throws -> MatchUpdate {
                try #require(try tracker.ingest(F.football(.live, goals, 0, clock: "\(seq)'", seq: seq), pollInterval: .seconds(5)))
            }
            func stored() async throws -> [ActivityRecord] {
                let all = try await store.activities(matchId: "epl-mun-liv")
                #expect(all.last == waiting)
                return all.filter { $0.activityId != waiting.activityId }
            }

            // A first fan-out saves its first chunk and never its second (the process died).
            let goal1 = try update(1, seq: 10)
            let first = try initial.map { try Self.moved($0, goal1, at: 60) }
            try await store.saveActivities(Array(first[0..<3]), enqueue: [], share: Self.share(Array(first[0..<3]), moved: [0, 1, 2], last: false))
            #expect(try await stored() == Array(first[0..<3]) + Array(initial[3..<6]))

            // The next fan-out starts from what was saved. Its first chunk leaves the rest where the crash left it.
            let goal2 = try update(2, seq: 20)
            let before = Array(first[0..<3]) + Array(initial[3..<6])
            var second = try before.map { try Self.moved($0, goal2, at: 120) }
            try await store.saveActivities(Array(second[0..<3]), enqueue: [], share: Self.share(Array(second[0..<3]), moved: [0, 1, 2], last: false))
            #expect(try await stored() == Array(second[0..<3]) + Array(initial[3..<6]))

            // Its last chunk: act-5 took the update a second later than the others, so it is written whole.
            second[4] = try Self.moved(before[4], goal2, at: 121)
            let chunk = Array(second[3..<6])
            try await store.saveActivities(chunk, enqueue: [], share: Self.share(chunk, moved: [0, 2], last: true))
            #expect(try await stored() == second)
            #expect(try await store.openActivities() == second + [waiting])
            #expect(try await store.activity(id: "act-5") == second[4])

            // A fan-out whose first chunk changed nothing (not described, nothing saved): the activities before its
            // first described chunk keep their state.
            let goal3 = try update(3, seq: 30)
            var third = second
            for index in 3..<6 { third[index] = try Self.moved(second[index], goal3, at: 180) }
            let last = Array(third[3..<6])
            try await store.saveActivities(last, enqueue: [], share: Self.share(last, moved: [0, 1, 2], last: true))
            #expect(try await stored() == third)

            // A write outside any fan-out: the activity keeps what it was written with, the others what they share.
            var ended = third[3]
            _ = ended.lifecycle.end(.dismissed, now: F.at(200))
            ended.updatedAt = F.at(200)
            try await store.saveActivity(ended)
            #expect(try await store.activity(id: "act-4") == ended)
            #expect(try await store.activity(updateToken: "upd-6") == third[5])
            #expect(try await store.openActivities() == Array(third[0..<3]) + Array(third[4..<6]) + [waiting])
        }
    }

    /// Three activities moved by a fan-out, then one of them takes a new update token: it reads back as written, and
    /// the next fan-out moves it with the others. Returns the id of the activity that took the token.
    @discardableResult
    static func tokenBetweenFanOuts(_ store: any MatchcastStore, afterToken: () async throws -> Void = {}) async throws -> String {
        try await store.createDevice(F.device("dev-a"))
        let initial = Array(Self.activities()[0..<3])
        try await store.saveActivities(initial)
        var tracker = MatchTracker()
        func update(_ goals: Int, seq: Int) throws -> MatchUpdate {
            try #require(try tracker.ingest(F.football(.live, goals, 0, clock: "\(seq)'", seq: seq), pollInterval: .seconds(5)))
        }
        let goal1 = try update(1, seq: 10)
        let first = try initial.map { try Self.moved($0, goal1, at: 60) }
        try await store.saveActivities(first, enqueue: [], share: Self.share(first, moved: [0, 1, 2], last: true))

        // act-2's app reports a new token ten seconds later.
        var rotated = first[1]
        _ = rotated.lifecycle.updateTokenRegistered("upd-9", now: F.at(70), policy: F.policy)
        rotated.updatedAt = F.at(70)
        try #require(rotated.updateToken == "upd-9")
        try await store.saveActivity(rotated)
        #expect(try await store.activity(id: "act-2") == rotated)
        #expect(try await store.activity(updateToken: "upd-9") == rotated)
        #expect(try await store.activity(updateToken: "upd-2") == nil)
        #expect(try await store.activities(matchId: "epl-mun-liv") == [first[0], rotated, first[2]])
        try await afterToken()

        let goal2 = try update(2, seq: 20)
        let second = try [first[0], rotated, first[2]].map { try Self.moved($0, goal2, at: 120) }
        try await store.saveActivities(second, enqueue: [], share: Self.share(second, moved: [0, 1, 2], last: true))
        #expect(try await store.activities(matchId: "epl-mun-liv") == second)
        #expect(try await store.activity(updateToken: "upd-9") == second[1])
        return rotated.activityId
    }

    @Test(arguments: StoreKind.allCases)
    func aTokenTakenBetweenFanOutsReadsBackAndMovesWithTheNext(_ kind: StoreKind) async throws {
        try await kind.withStore { store in try await Self.tokenBetweenFanOuts(store) }
    }

    /// A SQLite store in a file of its own, and a reader of each activity's `shared` column by id, on a connection of
    /// the test's own.
    private static func withSQLiteFile(
        _ body: (SQLiteStore, _ shared: () throws -> [String: Int]) async throws -> Void
    ) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        let inspect = try DatabaseQueue(path: path)
        try await body(store) {
            try inspect.read { db in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, shared FROM activity").map {
                    ($0[0] as String, $0[1] as Int)
                })
            }
        }
    }

    /// SQLite: the token's write keeps the activity in the match's shared state (it reads the same there, with a
    /// later update date of its own), so the next fan-out has nothing to write for it.
    @Test
    func sqliteKeepsAnActivityThatTookATokenInTheSharedState() async throws {
        try await Self.withSQLiteFile { store, shared in
            try await Self.tokenBetweenFanOuts(store) { () async throws in
                #expect(try shared() == ["act-1": 1, "act-2": 1, "act-3": 1])
            }
            #expect(try shared() == ["act-1": 1, "act-2": 1, "act-3": 1])
        }
    }

    /// SQLite: a chunk's moved activities that are not members join the shared state; those written whole in its
    /// range stay out, and so do another match's activities whose ids fall in the range. The members are found among
    /// the activities that do not share (v12's `activity_unshared`), not looked up one by one.
    @Test
    func sqliteJoinsOnlyTheMovedActivitiesOfTheChunksMatch() async throws {
        try await Self.withSQLiteFile { store, shared in
            try await store.createDevice(F.device("dev-a"))
            // act-1, act-3, act-5 follow the match; act-2 and act-4, between them, another one.
            let ours = [1, 3, 5].map { F.activity("act-\($0)", token: "upd-\($0)") }
            let theirs = [2, 4].map { F.activity("act-\($0)", match: "other", token: "upd-\($0)") }
            try await store.saveActivities(ours + theirs)
            #expect(try shared() == ["act-1": 0, "act-2": 0, "act-3": 0, "act-4": 0, "act-5": 0])
            var tracker = MatchTracker()
            func update(_ goals: Int, seq: Int) throws -> MatchUpdate {
                try #require(try tracker.ingest(F.football(.live, goals, 0, clock: "\(seq)'", seq: seq), pollInterval: .seconds(5)))
            }

            // The first fan-out: act-1 and act-5 move; act-3 took the update a second later, so it is written whole.
            let goal1 = try update(1, seq: 10)
            var first = try ours.map { try Self.moved($0, goal1, at: 60) }
            first[1] = try Self.moved(ours[1], goal1, at: 61)
            try await store.saveActivities(first, enqueue: [], share: Self.share(first, moved: [0, 2], last: true))
            #expect(try shared() == ["act-1": 1, "act-2": 0, "act-3": 0, "act-4": 0, "act-5": 1])
            #expect(try await store.activities(matchId: "epl-mun-liv") == first)
            #expect(try await store.activities(matchId: "other") == theirs)

            // The next: all three move, in two chunks; act-3 joins, the members stay, the other match is left alone.
            let goal2 = try update(2, seq: 20)
            let second = try first.map { try Self.moved($0, goal2, at: 120) }
            try await store.saveActivities(
                Array(second[0..<2]), enqueue: [], share: Self.share(Array(second[0..<2]), moved: [0, 1], last: false))
            try await store.saveActivities([second[2]], enqueue: [], share: Self.share([second[2]], moved: [0], last: true))
            #expect(try shared() == ["act-1": 1, "act-2": 0, "act-3": 1, "act-4": 0, "act-5": 1])
            #expect(try await store.activities(matchId: "epl-mun-liv") == second)
            #expect(try await store.activities(matchId: "other") == theirs)
        }
    }

    @Test(arguments: StoreKind.allCases.filter { $0 != .inMemory })
    func aChunkOfTwoMatchesIsRefused(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            try await store.createDevice(F.device("dev-a"))
            let records = [F.activity("act-1", token: "upd-1"), F.activity("act-2", match: "other", token: "upd-2")]
            try await store.saveActivities(records)
            var tracker = MatchTracker()
            let goal = try #require(try tracker.ingest(F.football(.live, 1, 0, clock: "9'", seq: 9), pollInterval: .seconds(5)))
            let moved = try Self.moved(records[0], goal, at: 60)
            // One match's state is shared; a chunk mixing two could not say whose. Nothing of it is saved.
            await #expect(throws: StoreError.invalid) {
                try await store.saveActivities(
                    [moved, records[1]], enqueue: [], share: Self.share([moved, records[1]], moved: [0], last: true))
            }
            #expect(try await store.activity(id: "act-1") == records[0])
        }
    }
}
