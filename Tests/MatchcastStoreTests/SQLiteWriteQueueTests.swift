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
    private static func queue() throws -> (DatabaseQueue, SQLiteWriteQueue) {
        let database = try DatabaseQueue()
        try database.write { try $0.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)") }
        return (database, SQLiteWriteQueue(writer: database))
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
