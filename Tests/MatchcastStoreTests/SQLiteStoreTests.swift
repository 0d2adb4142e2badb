import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture

@Suite("SQLite store")
struct SQLiteStoreTests {
    let directory = TemporaryDirectory()

    @Test func everythingSurvivesClosingAndReopening() async throws {
        defer { directory.remove() }
        let path = directory.path("data/matchcast.sqlite")
        let device = F.device("dev-a", at: 1)
        let token = F.token("dev-a", "pts-a", .sandbox, at: 2)
        let activity = ActivityRecord(deviceId: "dev-a", environment: .sandbox, lifecycle: try F.drivenLifecycle(), updatedAt: F.at(23))
        let ended = F.activity("act-2", token: "upd-2", ended: true, at: 24)
        let match = MatchRecord(snapshot: F.football(.live, 1, 0, clock: "13'", seq: 3), updatedAt: F.at(23))
        do {
            let store = try SQLiteStore(path: path)
            try await store.createDevice(device)
            try await store.setPushToStartToken(token)
            _ = try await store.addFollow(F.follow("dev-a", "epl-mun-liv", at: 3))
            try await store.saveActivities([activity, ended])
            try await store.saveMatch(match)
            try store.close()
            await #expect(throws: StoreError.database) { try await store.ping() }
        }

        let reopened = try SQLiteStore(path: path)
        defer { try? reopened.close() }
        #expect(try await reopened.device(id: "dev-a") == device)
        #expect(try await reopened.pushToStartToken(deviceId: "dev-a") == token)
        #expect(try await reopened.follows(deviceId: "dev-a") == [F.follow("dev-a", "epl-mun-liv", at: 3)])
        #expect(try await reopened.followedMatchIds() == ["epl-mun-liv"])
        #expect(try await reopened.openActivities() == [activity])
        #expect(try await reopened.activity(id: "act-2") == ended)
        #expect(try await reopened.matches() == [match])
    }

    @Test func openingTwiceMigratesOnce() async throws {
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let first = try SQLiteStore(path: path)
        try await first.createDevice(F.device("dev-a"))
        // A second process (`matchcast migrate`) opening the same file while the first is open.
        let second = try SQLiteStore(path: path)
        #expect(try await second.appliedMigrations() == SQLiteStore.migrator.migrations)
        #expect(try await second.device(id: "dev-a") != nil)
        try second.close()
        try first.close()
        let third = try SQLiteStore(path: path)
        #expect(try await third.appliedMigrations() == SQLiteStore.migrator.migrations)
        #expect(try await third.device(id: "dev-a") != nil)
        try third.close()
    }

    @Test func aFileDatabaseUsesWriteAheadLogging() async throws {
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        defer { try? store.close() }
        let mode = try await store.read("test") { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
        let foreignKeys = try await store.read("test") { db in try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") }
        #expect(foreignKeys == true)
    }

    @Test func anInMemoryDatabaseFollowsTheSameSchema() async throws {
        let store = try SQLiteStore.inMemory()
        #expect(try await store.appliedMigrations() == SQLiteStore.migrator.migrations)
        try await store.createDevice(F.device("dev-a"))
        #expect(try await store.device(id: "dev-a") != nil)
    }

    @Test func missingParentDirectoriesAreCreated() async throws {
        defer { directory.remove() }
        let path = directory.path("a/b/c/store.sqlite")
        let store = try SQLiteStore(path: path)
        try await store.ping()
        try store.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func anUnusablePathIsAClearError() throws {
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let blocker = directory.path("not-a-directory")
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocker))
        let path = blocker + "/store.sqlite"
        let error = try #require(throws: StoreError.self) { try SQLiteStore(path: path) }
        #expect(error == .configuration)
        #expect(error.message.contains(path))
    }

    @Test func aFileThatIsNotADatabaseIsAnError() throws {
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let path = directory.path("garbage.sqlite")
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: StoreError.self) { try SQLiteStore(path: path) }
        #expect(error == .corrupt)
        #expect(error.message.contains(path))
    }

    @Test(arguments: [
        "UPDATE activity SET phase = 'flying'",
        "UPDATE activity SET lastTimestamp = 'soon'",
        "UPDATE activity SET environment = 'staging'",
        "UPDATE activity SET updatedAt = 'yesterday'",
        "UPDATE activity SET sentContent = 424242",
        "UPDATE contentState SET content = '{\"home\": 3' WHERE id = (SELECT sentContent FROM activity)",
    ])
    func aDamagedActivityRowIsCorruptNotACrash(_ damage: String) async throws {
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        defer { try? store.close() }
        try await store.createDevice(F.device("dev-a"))
        let lifecycle = try F.drivenLifecycle()
        try await store.saveActivity(ActivityRecord(deviceId: "dev-a", environment: .production, lifecycle: lifecycle, updatedAt: F.at(23)))
        try await store.write("test") { db in try db.execute(sql: damage) }

        await #expect(throws: StoreError.corrupt) { _ = try await store.activity(id: "act_1") }
        await #expect(throws: StoreError.corrupt) { _ = try await store.openActivities() }
        await #expect(throws: StoreError.corrupt) { _ = try await store.activities(matchId: "epl-mun-liv") }
        await #expect(throws: StoreError.corrupt) { _ = try await store.activity(updateToken: "tok-1") }
        // The rest of the store still works, and the damaged row can be replaced or removed.
        try await store.ping()
        #expect(try await store.device(id: "dev-a") != nil)
        #expect(try await store.deleteActivity(id: "act_1"))
        #expect(try await store.openActivities().isEmpty)
    }

    @Test func aDamagedSnapshotIsCorruptNotACrash() async throws {
        let store = try SQLiteStore.inMemory()
        try await store.saveMatch(MatchRecord(snapshot: F.tennis(), updatedAt: F.at(0)))
        try await store.write("test") { db in
            try db.execute(sql: "UPDATE matchState SET snapshot = replace(snapshot, '\"tennis\"', '\"curling\"')")
        }
        let error = try #require(await #expect(throws: StoreError.self) { _ = try await store.matches() })
        #expect(error == .corrupt)
        #expect(error.reason == "corrupt")
        #expect(error.message.contains("wimbledon-sf1"))
    }
}
