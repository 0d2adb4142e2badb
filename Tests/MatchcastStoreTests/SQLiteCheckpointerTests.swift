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

    /// A burst of writes grows the log; once a checkpoint has copied it all, the next commit starts it over and cuts
    /// the file back to the limit, instead of leaving it at its largest for good.
    @Test
    func theLogIsCutBackOnceItStartsOver() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let limit = 256 << 10
        let store = try SQLiteStore(path: path, walSizeLimit: limit)
        #expect(try await store.writes.write { try Int.fetchOne($0, sql: "PRAGMA journal_size_limit") } == limit)
        let byDefault = try SQLiteStore(path: directory.path("default.sqlite"))
        #expect(try await byDefault.writes.write { try Int.fetchOne($0, sql: "PRAGMA journal_size_limit") } == SQLiteStore.walSizeLimit)
        try byDefault.close()
        func logSize() throws -> Int {
            try (FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        }

        try await store.createDevice(F.device("dev-a"))
        let records = (0..<6000).map { F.activity(String(format: "act-%05d", $0), token: String(format: "%064x", $0)) }
        try await store.saveActivities(records)
        let grown = try logSize()
        #expect(grown > 4 * limit)

        // Small commits, with pauses in which the checkpoint (after each 1,000 pages) can copy the whole log.
        var more = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while try logSize() > limit, ContinuousClock.now < deadline {
            let batch = (0..<50).map { F.activity(String(format: "more-%06d", more + $0)) }
            more += batch.count
            try await store.saveActivities(batch)
            try await Task.sleep(for: .milliseconds(20))
        }
        let left = try logSize()
        #expect(left <= limit, "the log stayed at \(left) bytes after \(more) more activities")
        #expect(try await store.activities(matchId: "epl-mun-liv").count == records.count + more)
        try store.close()
    }

    @Test
    func anInMemoryStoreHasNoCheckpointer() throws {
        #expect(try SQLiteStore.inMemory().checkpointer == nil)
    }
}
