import Foundation
import GRDB
import Synchronization
@testable import MatchcastStore
import Testing

/// Group commit: writes that wait behind a running one share its next transaction, each in its own savepoint.
@Suite("SQLite group commit")
struct SQLiteWriteQueueTests {
    struct Refused: Error, Equatable {}

    /// A queue on a fresh in-memory database with one table.
    private static func queue(linger: Duration = .milliseconds(10)) throws -> (DatabaseQueue, SQLiteWriteQueue) {
        let database = try DatabaseQueue()
        try database.write { try $0.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)") }
        return (database, SQLiteWriteQueue(writer: database, linger: linger))
    }

    /// A queue that has just committed a write: busy of late, so a write that may wait does.
    private static func busyQueue(linger: Duration) async throws -> (DatabaseQueue, SQLiteWriteQueue) {
        let (database, queue) = try queue(linger: linger)
        try await insert("first", into: queue, mayWait: false)
        return (database, queue)
    }

    private static func insert(_ name: String, into queue: SQLiteWriteQueue, mayWait: Bool) async throws {
        try await queue.write(mayWait: mayWait) { db in
            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: [name])
        }
    }

    @Test("writes that may wait, soon after a transaction, wait the linger and commit together")
    func writesThatMayWaitCommitTogether() async throws {
        // Long enough that the five arrive within it, and within twice it of the first write, on a loaded machine (a
        // run beside a build once took more than 4 s to get from the first write to the five, which then did not wait).
        let (database, queue) = try await Self.busyQueue(linger: .seconds(4))
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<5 {
                group.addTask { try await Self.insert("waited-\(index)", into: queue, mayWait: true) }
            }
            try await group.waitForAll()
        }
        #expect(ContinuousClock.now - started >= .milliseconds(3900), "they waited for one another")
        #expect(queue.transactionCount == 2, "the first write, then the five together")
        let count = try await database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item") }
        #expect(count == 6)
    }

    @Test("a write that may not wait starts the transaction at once, and takes the waiting writes with it")
    func aWriteThatMayNotWaitTakesTheWaitingOnes() async throws {
        let (database, queue) = try await Self.busyQueue(linger: .seconds(30))
        let started = ContinuousClock.now
        let waiting = Task { try await Self.insert("waiting", into: queue, mayWait: true) }
        while queue.pendingCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        try await Self.insert("api", into: queue, mayWait: false)
        try await waiting.value
        #expect(ContinuousClock.now - started < .seconds(15), "nobody waited out the 30 s linger")
        #expect(queue.transactionCount == 2)
        let names = try await database.read { try String.fetchSet($0, sql: "SELECT name FROM item") }
        #expect(names == ["first", "waiting", "api"])
    }

    @Test("a write that may wait but that an API request waits for (StoreWrites.callerWaits) commits at once, however busy")
    func aWriteACallerWaitsForCommitsAtOnce() async throws {
        let (database, queue) = try await Self.busyQueue(linger: .seconds(30))
        let started = ContinuousClock.now
        try await StoreWrites.$callerWaits.withValue(true) { try await Self.insert("api", into: queue, mayWait: true) }
        #expect(ContinuousClock.now - started < .seconds(15), "it did not wait out the 30 s linger")
        #expect(queue.transactionCount == 2)
        // Outside a request, the same write just as soon after lingers: still pending after a moment.
        let waiting = Task { try await Self.insert("polling", into: queue, mayWait: true) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(queue.pendingCount == 1, "a write that may wait lingers when nobody waits for it")
        try await Self.insert("flush", into: queue, mayWait: false)  // takes the lingering one with it
        try await waiting.value
        let count = try await database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item") }
        #expect(count == 4)
    }

    @Test("a write that may wait, on a writer idle of late, commits at once")
    func aWriteThatMayWaitOnAnIdleWriterCommitsAtOnce() async throws {
        let (_, queue) = try Self.queue(linger: .seconds(30))
        let started = ContinuousClock.now
        try await Self.insert("alone", into: queue, mayWait: true)  // no transaction before it
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(queue.transactionCount == 1)
    }

    @Test("writes that wait run in one transaction, and one that fails fails alone")
    func waitingWritesShareATransactionAndFailAlone() async throws {
        let (database, queue) = try Self.queue()
        // The first write holds the writer until the 50 below are queued behind it.
        let running = Atomic<Bool>(false)
        let first = Task {
            _ = try await queue.write { db in
                running.store(true, ordering: .sequentiallyConsistent)
                while queue.pendingCount < 50 { usleep(1000) }
                try db.execute(sql: "INSERT INTO item (name) VALUES ('first')")
            }
        }
        while !running.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<50 {
                group.addTask {
                    do {
                        try await queue.write { db in
                            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["item-\(index)"])
                            if index % 10 == 3 { throw Refused() }  // after its insert: the savepoint must undo it
                            if index == 7 {
                                // A constraint error inside the group: 'first' exists.
                                try db.execute(sql: "INSERT INTO item (name) VALUES ('first')")
                            }
                        }
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
            }
            var outcomes: [Int: Bool] = [:]
            for await (index, ok) in group { outcomes[index] = ok }
            return outcomes
        }
        try await first.value
        let failed = Set(outcomes.filter { !$0.value }.keys)
        #expect(failed == [3, 7, 13, 23, 33, 43])
        let names = try await database.read { try String.fetchSet($0, sql: "SELECT name FROM item") }
        let expected = Set(["first"] + (0..<50).filter { !failed.contains($0) }.map { "item-\($0)" })
        #expect(names == expected)
        // One transaction for the first write, then the 50 together (at most the group limit at a time).
        #expect(queue.transactionCount == 2)
    }

    @Test("a lone write is a transaction of its own and returns its value")
    func aLoneWriteReturnsItsValue() async throws {
        let (_, queue) = try Self.queue()
        let id = try await queue.write { db -> Int64 in
            try db.execute(sql: "INSERT INTO item (name) VALUES ('alone')")
            return db.lastInsertedRowID
        }
        #expect(id == 1)
        await #expect(throws: Refused.self) {
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES ('undone')")
                throw Refused()
            }
        }
        let count = try await queue.write { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM item") ?? -1 }
        #expect(count == 1)
        #expect(queue.transactionCount == 3)
    }
}
