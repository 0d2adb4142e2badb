import Foundation
import MatchcastCore
internal import GRDB

extension SQLiteStore {
    public func saveActivity(_ record: ActivityRecord) async throws(StoreError) {
        try await saveActivities([record])
    }

    public func saveActivities(_ records: [ActivityRecord]) async throws(StoreError) {
        guard !records.isEmpty else { return }
        let batch = try ActivityBatch(records)
        try await write(records.count == 1 ? "saving an activity" : "saving \(records.count) activities") { [contentPruning] db in
            try batch.write(db, contentPruning)
        }
    }

    public func activity(id: String) async throws(StoreError) -> ActivityRecord? {
        try await read("reading an activity") { db in
            try Self.activities(db, "WHERE id = ?", [id]).first
        }
    }

    public func activities(matchId: String) async throws(StoreError) -> [ActivityRecord] {
        try await read("reading a match's activities") { db in
            try Self.activities(db, "WHERE matchId = ? ORDER BY id", [matchId])
        }
    }

    public func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord] {
        try await read("reading a device's activities") { db in
            try Self.activities(db, "WHERE deviceId = ? ORDER BY id", [deviceId])
        }
    }

    public func activity(updateToken: String) async throws(StoreError) -> ActivityRecord? {
        try await read("finding an activity by update token") { db in
            try Self.activities(
                db, "WHERE \(Self.holdsToken(token: "?1", key: "?2")) ORDER BY phase = 'ended', updatedAt DESC, id LIMIT 1",
                [updateToken, Self.tokenKey(updateToken)])
                .first
        }
    }

    @discardableResult
    public func deleteActivity(id: String) async throws(StoreError) -> Bool {
        try await write("deleting an activity") { db in
            try db.cachedStatement(sql: "DELETE FROM activity WHERE id = ?").execute(arguments: [id])
            return db.changesCount > 0
        }
    }

    public func openActivities() async throws(StoreError) -> [ActivityRecord] {
        try await read("reading open activities") { db in
            try Self.activities(db, "WHERE phase <> 'ended' ORDER BY id", [])
        }
    }

    // MARK: Reading

    /// The columns `ActivityRow` reads, in its order.
    static let activityColumns = """
        id, deviceId, matchId, environment, phase, updateToken, lastTimestamp, sentContent, sentAt, sentStaleDate,
        startedAt, heldContent, heldStaleness, endHeld, finalContent, channelId, updatedAt
        """

    /// The activities a clause selects, with the contents they refer to read once each.
    static func activities(_ db: Database, _ clause: String, _ arguments: StatementArguments) throws -> [ActivityRecord] {
        // Through the view: an activity that shares its match's sent state (v6) reads it from there.
        let statement = try SQLiteRawStatement(db, sql: "SELECT \(activityColumns) FROM activityView \(clause)")
        try statement.bind(arguments)
        defer { statement.reset() }
        var rows: [ActivityRow] = []
        var ids = Set<Int64>()
        var dates: [String: Date] = [:]
        while try statement.step() {
            let row = try ActivityRow(statement, dates: &dates)
            ids.formUnion(row.contentIds)
            rows.append(row)
        }
        guard !rows.isEmpty else { return [] }
        var contents = LoadedContents()
        if !ids.isEmpty {
            let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
            for content in try Row.fetchAll(
                db.cachedStatement(sql: "SELECT id, content FROM contentState WHERE id IN (SELECT value FROM json_each(?))"),
                    arguments: [list]) {
                try contents.add(id: content.decode(atIndex: 0), text: content.decode(atIndex: 1))
            }
        }
        var records: [ActivityRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows { records.append(try ActivityRecord(row, contents: contents)) }
        return records
    }
}

/// Activity records ready for SQL: validated, their contents encoded once each. Built before the write lock is
/// taken, so the transaction only runs SQL.
struct ActivityBatch: Sendable {
    let records: [ActivityRecord]
    let contents: StoredContents
    /// `contents.entries` with their keys, hashed here rather than on the writer's queue.
    private let keyed: [KeyedContent]
    /// By record: whether it is written as sharing its match's sent state (`shared` 1) rather than with its own. Nil
    /// outside a fan-out: then a record shares the state if it reads the same there (`StoredFanOutStates`).
    private let joins: [Bool]?

    /// Every record written whole. One that is at its match's shared state already (an update token registered
    /// after a fan-out) stays in it, so the next fan-out need not write it.
    init(_ records: [ActivityRecord]) throws(StoreError) {
        self.records = records
        contents = try StoredContents(records)
        keyed = contents.entries.map(KeyedContent.init)
        joins = nil
    }

    /// A fan-out chunk's records but those `share` says moved with it (`FanOutShare.chunk(of:)`; `FanOutStateWrite`
    /// joins them); each one
    /// that is open and started, in the range the chunk covers and at the shared state joins it as it is written.
    /// A waiting activity never joins, so a fan-out that leaves one waiting need not write it.
    init(written: [ActivityRecord], share: FanOutShare) throws(StoreError) {
        self.records = written
        contents = try StoredContents(written)
        keyed = contents.entries.map(KeyedContent.init)
        var joins: [Bool] = []
        joins.reserveCapacity(written.count)
        for position in written.indices {
            let record = written[position]
            joins.append(record.isOpen && record.phase != .waiting && share.covers(record.activityId)
                && FanOutState(contents.stored[position], updatedAt: record.updatedAt) == share.state)
        }
        self.joins = joins
    }

    /// The fan-out case: the stored row keeps its device, match, environment, token and phase, and only the
    /// lifecycle's dates and contents move on. No indexed column is in the `SET` list, so SQLite rewrites the row and
    /// no index entry. The arguments are `updateSQL`'s, in its order.
    static let samePhaseSQL = """
        UPDATE activity SET
            lastTimestamp = ?2, sentContent = ?3, sentAt = ?4, sentStaleDate = ?5, startedAt = ?6,
            heldContent = ?7, heldStaleness = ?8, endHeld = ?9, finalContent = ?10, channelId = ?11, updatedAt = ?12,
            shared = ?18
        WHERE id = ?13 AND deviceId = ?14 AND matchId = ?15 AND environment = ?16 AND updateToken IS ?17 AND phase = ?1
        """

    /// The row keeps its device, match, environment and token; its phase may change. One statement, no lookups; the
    /// triggers on open tokens stay the backstop.
    static let updateSQL = """
        UPDATE activity SET
            phase = ?1, lastTimestamp = ?2, sentContent = ?3, sentAt = ?4, sentStaleDate = ?5, startedAt = ?6,
            heldContent = ?7, heldStaleness = ?8, endHeld = ?9, finalContent = ?10, channelId = ?11, updatedAt = ?12,
            shared = ?18
        WHERE id = ?13 AND deviceId = ?14 AND matchId = ?15 AND environment = ?16 AND updateToken IS ?17
        """

    static let upsertSQL = """
        INSERT INTO activity (
            phase, lastTimestamp, sentContent, sentAt, sentStaleDate, startedAt,
            heldContent, heldStaleness, endHeld, finalContent, channelId, updatedAt,
            id, deviceId, matchId, environment, updateToken, shared, tokenKey)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET
            deviceId = excluded.deviceId, matchId = excluded.matchId, environment = excluded.environment,
            phase = excluded.phase, updateToken = excluded.updateToken, lastTimestamp = excluded.lastTimestamp,
            sentContent = excluded.sentContent, sentAt = excluded.sentAt, sentStaleDate = excluded.sentStaleDate,
            startedAt = excluded.startedAt, heldContent = excluded.heldContent, heldStaleness = excluded.heldStaleness,
            endHeld = excluded.endHeld, finalContent = excluded.finalContent, channelId = excluded.channelId,
            updatedAt = excluded.updatedAt, shared = excluded.shared, tokenKey = excluded.tokenKey
        """

    /// The row keeps its device, match and environment and takes a new token (registered or rotated): no index but
    /// the token's changes. The triggers refuse a token another open activity holds.
    static let tokenSQL = """
        UPDATE activity SET
            phase = ?1, lastTimestamp = ?2, sentContent = ?3, sentAt = ?4, sentStaleDate = ?5, startedAt = ?6,
            heldContent = ?7, heldStaleness = ?8, endHeld = ?9, finalContent = ?10, channelId = ?11, updatedAt = ?12,
            updateToken = ?17, shared = ?18, tokenKey = ?19
        WHERE id = ?13 AND deviceId = ?14 AND matchId = ?15 AND environment = ?16
        """

    /// Writes every record, in order, inside the caller's transaction; the contents it adds are counted by `pruning`.
    func write(_ db: Database, _ pruning: SQLiteContentPruning) throws {
        let contentIds = try Self.contentIds(keyed, db, pruning)
        let samePhase = try SQLiteRawStatement(db, sql: Self.samePhaseSQL)
        let update = try SQLiteRawStatement(db, sql: Self.updateSQL)
        var token: SQLiteRawStatement?
        var shared = StoredFanOutStates()
        var lastDate: Date?
        var lastDateText = ""
        for position in records.indices {
            let updatedAt = records[position].updatedAt
            if updatedAt != lastDate {
                lastDate = updatedAt
                lastDateText = SQLiteDateText.text(updatedAt)
            }
            let join = try joins?[position] ?? shared.holds(
                records[position], values: sharedValues(position, contentIds, updatedAt: lastDateText), db)
            bind(position, updatedAt: lastDateText, join: join, contentIds, to: samePhase)
            if try samePhase.run() == 1 { continue }
            bind(position, updatedAt: lastDateText, join: join, contentIds, to: update)
            if try run(update, position, db) == 1 { continue }
            let tokenChange = try token ?? SQLiteRawStatement(db, sql: Self.tokenSQL)
            token = tokenChange
            bind(position, updatedAt: lastDateText, join: join, contentIds, to: tokenChange)
            tokenChange.bind(19, contents.stored[position].updateToken.map { SQLiteStore.tokenKey($0) })
            if try run(tokenChange, position, db) == 1 { continue }
            try Self.insertOrReplace(records[position], arguments(position, join: join, contentIds), db)
        }
    }

    /// Runs an update of the record at `position`; when the triggers refuse its token (held by another open
    /// activity), the error names the holder.
    private func run(_ statement: SQLiteRawStatement, _ position: Int, _ db: Database) throws -> Int {
        do {
            return try statement.run()
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_TRIGGER {
            try Self.checkToken(records[position], db)
            throw error
        }
    }

    /// The record at `position`'s values of what a match's activities can share.
    private func sharedValues(_ position: Int, _ contentIds: [Int64], updatedAt: String) -> StoredFanOutStates.Values {
        let refs = contents.refs[position]
        let stored = contents.stored[position]
        func id(_ ref: Int32) -> Int64? { ref < 0 ? nil : contentIds[Int(ref)] }
        return StoredFanOutStates.Values(
            lastTimestamp: stored.lastTimestamp, sent: id(refs.sent), sentAt: stored.sentAt,
            sentStaleDate: stored.sentStaleDate, held: id(refs.held), heldStaleness: stored.heldStaleness,
            updatedAt: updatedAt)
    }

    /// The record at `position` bound as `updateSQL`'s (and `samePhaseSQL`'s, `tokenSQL`'s) numbered parameters.
    private func bind(
        _ position: Int, updatedAt: String, join: Bool, _ contentIds: [Int64], to statement: SQLiteRawStatement
    ) {
        let refs = contents.refs[position]
        let stored = contents.stored[position]
        func id(_ ref: Int32) -> Int64? { ref < 0 ? nil : contentIds[Int(ref)] }
        statement.bind(1, stored.phase.rawValue)
        statement.bind(2, stored.lastTimestamp)
        statement.bind(3, id(refs.sent))
        statement.bind(4, stored.sentAt)
        statement.bind(5, stored.sentStaleDate)
        statement.bind(6, stored.startedAt)
        statement.bind(7, id(refs.held))
        statement.bind(8, stored.heldStaleness)
        statement.bind(9, stored.endHeld)
        statement.bind(10, id(refs.final))
        statement.bind(11, stored.channelId)
        statement.bind(12, updatedAt)
        statement.bind(13, records[position].activityId)
        statement.bind(14, records[position].deviceId)
        statement.bind(15, records[position].matchId)
        statement.bind(16, records[position].environment.rawValue)
        statement.bind(17, stored.updateToken)
        statement.bind(18, join)
    }

    /// The same values as `bind`, as GRDB arguments (the rare insert path).
    private func arguments(_ position: Int, join: Bool, _ contentIds: [Int64]) -> StatementArguments {
        let refs = contents.refs[position]
        let stored = contents.stored[position]
        func id(_ ref: Int32) -> Int64? { ref < 0 ? nil : contentIds[Int(ref)] }
        return [
            stored.phase.rawValue, stored.lastTimestamp, id(refs.sent), stored.sentAt, stored.sentStaleDate,
            stored.startedAt, id(refs.held), stored.heldStaleness, stored.endHeld, id(refs.final), stored.channelId,
            SQLiteDateText.text(records[position].updatedAt),
            records[position].activityId, records[position].deviceId, records[position].matchId,
            records[position].environment.rawValue, stored.updateToken?.string, join, stored.updateToken.map { SQLiteStore.tokenKey($0) },
        ]
    }


    /// A new activity, or one whose device, match, environment or token changes: the device must exist and the
    /// token must not be held by another open activity.
    private static func insertOrReplace(_ record: ActivityRecord, _ arguments: StatementArguments, _ db: Database) throws {
        try SQLiteStore.requireDevice(record.deviceId, db)
        try checkToken(record, db)
        let upsert = try db.cachedStatement(sql: upsertSQL)
        upsert.setUncheckedArguments(arguments)
        try upsert.execute()
    }

    /// `.conflict`, naming the holder, when the record is open and another open activity holds its token.
    private static func checkToken(_ record: ActivityRecord, _ db: Database) throws {
        if record.isOpen, let token = record.updateToken,
           let holder = try String.fetchOne(
               db.cachedStatement(sql: """
                   SELECT id FROM activity
                   WHERE \(SQLiteStore.holdsToken(token: "?1", key: "?3")) AND phase <> 'ended' AND id <> ?2 LIMIT 1
                   """),
               arguments: [token, record.activityId, SQLiteStore.tokenKey(token)]) {
            throw StoreError.conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holder)'")
        }
    }

    /// The id of each distinct content's row, added when the match has no row with that text yet (and counted by
    /// `pruning`): found by its key and then its text (v13), so a text that shares another's key gets a row of its own.
    static func contentIds(_ entries: [KeyedContent], _ db: Database, _ pruning: SQLiteContentPruning) throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        let find = try SQLiteRawStatement(
            db, sql: "SELECT id FROM contentState WHERE matchId = ?1 AND contentKey = ?2 AND content = ?3 LIMIT 1")
        let insert = try SQLiteRawStatement(db, sql: "INSERT INTO contentState (matchId, contentKey, content) VALUES (?1, ?2, ?3)")
        var ids: [Int64] = []
        ids.reserveCapacity(entries.count)
        for content in entries {
            let (entry, key) = (content.entry, content.key)
            find.bind(1, entry.matchId)
            find.bind(2, key)
            find.bind(3, entry.text)
            if let id = try find.first({ try find.integer(0, "a content's id") }) ?? nil {
                ids.append(id)
            } else {
                insert.bind(1, entry.matchId)
                insert.bind(2, key)
                insert.bind(3, entry.text)
                try insert.run()
                ids.append(db.lastInsertedRowID)
                pruning.added(matchId: entry.matchId)
            }
        }
        return ids
    }
}

/// A content as `ActivityBatch.contentIds` looks it up: the entry and its text's key (v13), hashed by whoever
/// prepares the write, so that the store's one writer does not.
struct KeyedContent: Sendable {
    let entry: StoredContents.Entry
    let key: Int64

    init(_ entry: StoredContents.Entry) {
        self.entry = entry
        key = SQLiteTextKey.of(entry.text)
    }
}
