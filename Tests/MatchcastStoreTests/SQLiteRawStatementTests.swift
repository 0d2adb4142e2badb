import Foundation
import GRDB
@testable import MatchcastStore
import Testing

/// `SQLiteRawStatement`: the store's hot statements bound and stepped through SQLite's C API, on GRDB's cached
/// statements. What must hold is what GRDB would otherwise see to: a statement left part-way runs again from its
/// first row, values read by their type, blobs kept apart from NULL.
@Suite("SQLite statements run through the C API")
struct SQLiteRawStatementTests {
    static func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, number INTEGER, text TEXT, bytes BLOB);
                INSERT INTO t VALUES (1, 7, 'seven', x'0102'), (2, NULL, '', NULL), (3, 9, '9', x'');
                """)
        }
        return queue
    }

    private struct Stop: Error {}

    @Test("a query stopped by its reader, or left after its first row, runs again from its first row")
    func resetsAfterAnEarlyEnd() throws {
        let queue = try Self.database()
        try queue.read { db in
            let sql = "SELECT id FROM t ORDER BY id"
            let select = try SQLiteRawStatement(db, sql: sql)
            var seen: [Int64] = []
            var stopped = false
            do {
                try select.forEach {
                    seen.append(try select.integer(0, "id") ?? -1)
                    if seen.count == 2 { throw Stop() }
                }
            } catch is Stop {
                stopped = true
            }
            #expect(stopped && seen == [1, 2])
            // The same cached statement, taken again.
            let again = try SQLiteRawStatement(db, sql: sql)
            var all: [Int64] = []
            try again.forEach { all.append(try again.integer(0, "id") ?? -1) }
            #expect(all == [1, 2, 3])
            #expect(try again.first { try again.integer(0, "id") } == 1)
            #expect(try again.first { try again.integer(0, "id") } == 1, "the row after the first is not where it starts")
            // Stepped through GRDB's own API and left there, the cached statement still starts afresh.
            let cursor = try Int64.fetchCursor(db.cachedStatement(sql: sql))
            _ = try cursor.next()
            _ = try cursor.next()
            let third = try SQLiteRawStatement(db, sql: sql)
            #expect(try third.first { try third.integer(0, "id") } == 1)
        }
    }

    @Test("a row's values are read by type: NULL is nil, and an integer is not read as text nor text as an integer")
    func readsByType() throws {
        let queue = try Self.database()
        try queue.read { db in
            let select = try SQLiteRawStatement(db, sql: "SELECT number, text FROM t WHERE id = ?1")
            select.bind(1, Int64(1))
            #expect(try select.first { try select.integer(0, "number") } == 7)
            #expect(try select.first { try select.text(1, "text") } == "seven")
            select.bind(1, Int64(2))
            #expect(try select.first { try select.integer(0, "number") } == .some(nil))
            #expect(try select.first { try select.text(1, "text") } == "")
            select.bind(1, Int64(3))
            var refused = 0
            do { _ = try select.first { try select.text(0, "an integer") } } catch is StoreError { refused += 1 }
            do { _ = try select.first { try select.integer(1, "a text") } } catch is StoreError { refused += 1 }
            #expect(refused == 2)
            select.bind(1, Int64(4))
            #expect(try select.first { true } == nil)
        }
    }

    @Test("bytes bound as a blob read back the same, an empty one as an empty blob, not NULL")
    func blobs() throws {
        let queue = try Self.database()
        try queue.write { db in
            let insert = try SQLiteRawStatement(db, sql: "INSERT INTO t (id, bytes) VALUES (?1, ?2)")
            for (id, bytes) in [(10, [UInt8]()), (11, [0, 255, 1])] {
                insert.bind(1, Int64(id))
                insert.bind(2, bytes: bytes)
                try insert.run()
            }
            insert.bind(1, Int64(12))
            insert.bind(2, Data([42]))
            try insert.run()
            let select = try SQLiteRawStatement(db, sql: "SELECT bytes, typeof(bytes) FROM t WHERE id = ?1")
            for (id, expected) in [(10, Data()), (11, Data([0, 255, 1])), (12, Data([42])), (1, Data([1, 2]))] {
                select.bind(1, Int64(id))
                let (read, type) = try #require(try select.first { (try select.data(0, "bytes"), try select.text(1, "type")) })
                #expect(read == expected, "row \(id)")
                #expect(type == "blob", "row \(id)")
            }
            select.bind(1, Int64(2))
            #expect(try select.first { try select.data(0, "bytes") } == .some(nil))
            let text = try SQLiteRawStatement(db, sql: "SELECT text FROM t WHERE id = 1")
            var refused = false
            do {
                _ = try text.first { try text.data(0, "a text column") }
            } catch is StoreError {
                refused = true
            }
            #expect(refused, "a text is not read as a blob")
        }
    }
}
