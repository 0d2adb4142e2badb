import Foundation
import GRDB
@testable import MatchcastStore
import Testing

/// SQLite finds a match's content by its key and then its text (schema v13), not by a unique index on the text.
@Suite("SQLite contents found by their key")
struct SQLiteContentKeyTests {
    static let goal = #"{"home":{"score":"1"},"away":{"score":"0"},"clock":"12'"}"#
    static let second = #"{"home":{"score":"2"},"away":{"score":"0"},"clock":"31'"}"#
    static let third = #"{"home":{"score":"2"},"away":{"score":"1"},"clock":"58'"}"#

    /// Each distinct content's row id, as a save finds or adds it, in one write.
    static func contentIds(_ store: SQLiteStore, _ entries: [(String, String)]) async throws -> [Int64] {
        let entries = entries.map { KeyedContent(StoredContents.Entry(matchId: $0.0, text: $0.1)) }
        return try await store.write("test") { db in try ActivityBatch.contentIds(entries, db, store.contentPruning) }
    }

    static func rowCount(_ store: SQLiteStore) async throws -> Int {
        try await store.read("test") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contentState") ?? 0 }
    }

    @Test("a v12 file's contents take their keys at v13, the text's index gives way to the key's, and a save finds them")
    func upgradesInPlace() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let path = directory.path("matchcast.sqlite")
        // As v12 left it: rows keyed by their text alone.
        let pool = try DatabasePool(path: path, configuration: SQLiteStore.makeConfiguration())
        try SQLiteStore.migrator.migrate(pool, upTo: "v12")
        let v12Ids = try await pool.write { db -> [Int64] in
            var ids: [Int64] = []
            for (matchId, text) in [("m1", Self.goal), ("m1", Self.second), ("m2", Self.goal)] {
                try db.execute(sql: "INSERT INTO contentState (matchId, content) VALUES (?, ?)", arguments: [matchId, text])
                ids.append(db.lastInsertedRowID)
            }
            return ids
        }
        try pool.close()

        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        #expect(try await store.appliedMigrations().last == "v13")
        let rows = try await store.read("test") { db in
            try Row.fetchAll(db, sql: "SELECT id, contentKey, content FROM contentState ORDER BY id")
                .map { (id: $0[0] as Int64, key: $0[1] as Int64, text: $0[2] as String) }
        }
        #expect(rows.map(\.id) == v12Ids)
        for row in rows {
            #expect(row.key == SQLiteTextKey.of(row.text), "row \(row.id) keyed by its text")
        }
        let indexes = try await store.read("test") { db in
            try String.fetchSet(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'contentState'")
        }
        #expect(indexes == ["contentState_on_match_key"])

        // A content the match has is found (another match's same text is not its own); a new one is added, once.
        let ids = try await Self.contentIds(store, [("m1", Self.second), ("m1", Self.third), ("m2", Self.second)])
        #expect(ids[0] == v12Ids[1])
        #expect(!v12Ids.contains(ids[1]) && !v12Ids.contains(ids[2]) && ids[1] != ids[2])
        #expect(try await Self.contentIds(store, [("m1", Self.second), ("m1", Self.third), ("m2", Self.second)]) == ids)
        #expect(try await Self.contentIds(store, [("m2", Self.goal)]) == [v12Ids[2]])
        #expect(try await Self.rowCount(store) == 5)
    }

    @Test("a content is told apart by its text from another row of the same key")
    func sameKeyOtherText() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("matchcast.sqlite"))
        defer { try? store.close() }
        // A row holding one text under another's key: what a shared key would look like.
        let planted = try await store.write("test") { db -> Int64 in
            try db.execute(
                sql: "INSERT INTO contentState (matchId, contentKey, content) VALUES ('m1', ?, ?)",
                arguments: [SQLiteTextKey.of(Self.third), Self.goal])
            return db.lastInsertedRowID
        }
        let ids = try await Self.contentIds(store, [("m1", Self.third)])
        #expect(ids != [planted], "the row of the other text is not taken for this one")
        #expect(try await Self.contentIds(store, [("m1", Self.third)]) == ids, "and the row added for it is found next time")
        #expect(try await Self.rowCount(store) == 2)
        let stored = try await store.read("test") { db in
            try String.fetchOne(db, sql: "SELECT content FROM contentState WHERE id = ?", arguments: [ids[0]])
        }
        #expect(stored == Self.third)
    }

    @Test("the key is the first 64 bits of the text's SHA-256, as kept on disk")
    func keyIsStable() {
        // Fixed values: keys written by one release are looked up by the next.
        #expect(SQLiteTextKey.of("") == Int64(bitPattern: 0xe3b0_c442_98fc_1c14))
        #expect(SQLiteTextKey.of("abc") == Int64(bitPattern: 0xba78_16bf_8f01_cfea))
        #expect(SQLiteStore.tokenKey("abc") == SQLiteTextKey.of("abc"), "update tokens keep the key they had since v7")
    }
}
