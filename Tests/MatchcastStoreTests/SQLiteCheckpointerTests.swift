import Foundation
import GRDB
@testable import MatchcastStore
import Testing

private typealias F = StoreFixture

/// The SQLite file store checkpoints its log on a connection of its own: the writer's connection never does, the log
/// is copied into the file as it grows, and what was written reads back after the store is closed and opened again.
@Suite("SQLite checkpoints off the writer")
struct SQLiteCheckpointerTests {
    @Test
    func theLogIsCheckpointedBesideTheWriterAndNothingIsLost() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let store = try SQLiteStore(path: path)
        let checkpointer = try #require(store.checkpointer)

        // The writer's connection leaves checkpoints alone; readers keep SQLite's default (they never commit).
        #expect(try await store.writes.write { try Int.fetchOne($0, sql: "PRAGMA wal_autocheckpoint") } == 0)
        #expect(checkpointer.checkpoints == 0)

        // Far more than a threshold's worth of pages (each activity row and its index entries), in many commits.
        try await store.createDevice(F.device("dev-a"))
        let records = (0..<6000).map { F.activity(String(format: "act-%05d", $0), token: String(format: "%064x", $0)) }
        for start in stride(from: 0, to: records.count, by: 200) {
            try await store.saveActivities(Array(records[start..<min(start + 200, records.count)]))
        }
        // The checkpoint runs on its own queue after the commit that crossed the threshold: wait for it.
        let deadline = ContinuousClock.now + .seconds(30)
        while checkpointer.checkpoints == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(checkpointer.checkpoints > 0)

        try store.close()
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.activities(matchId: "epl-mun-liv") == records)
        try reopened.close()
    }

    @Test
    func anInMemoryStoreHasNoCheckpointer() throws {
        #expect(try SQLiteStore.inMemory().checkpointer == nil)
    }
}
