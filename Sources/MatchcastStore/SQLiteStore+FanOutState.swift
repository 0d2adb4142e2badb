import Foundation
import MatchcastCore
internal import GRDB

/// A fan-out chunk's sent state, kept once for its match in `fanOutState` (migration v6) rather than in each
/// activity's row: an update that moves 100,000 activities to one state writes one row, not 100,000.
///
/// The match's row holds a current and a previous state and a boundary. An activity with `shared` 1 is at the current
/// state if its id is at most the boundary (or the boundary is null), at the previous one otherwise. A fan-out opens
/// a new current state at its first chunk (boundary '': every member at the previous one), and each chunk saved
/// moves the boundary past its range, in the same transaction as the chunk's records and deliveries. So a crash
/// part-way leaves the activities of the chunks saved at the new state, with their deliveries queued, and the
/// others at the state before, exactly as when every row was written.
///
/// In the range a chunk covers, every member moves with the boundary unless its row is written: the caller's
/// promise (`FanOutShare`) is that every open activity of that range is among the chunk's records, so those that do
/// not simply move are written (`shared` 0, their own state) and those that do either are members already (nothing
/// written) or join (`shared` set to 1).
struct FanOutStateWrite: Sendable {
    let matchId: String
    let state: FanOutState
    let from: String
    let through: String?
    /// Activities whose only change is to `state`.
    let movedIds: [String]
    /// `state.sent` and `state.held`, encoded and keyed, for their content rows.
    private let sent: KeyedContent?
    private let held: KeyedContent?
    /// `state.updatedAt` as stored.
    private let updatedAt: String

    private static let columns = StoredFanOutStates.columns
    private static let previous = StoredFanOutStates.previous

    /// Prunes the match's contents when the fan-out opens a new state.
    private let pruning: SQLiteContentPruning

    init(_ share: FanOutShare, matchId: String, movedIds: [String], pruning: SQLiteContentPruning) throws(StoreError) {
        self.matchId = matchId
        self.pruning = pruning
        state = share.state
        from = share.from
        through = share.through
        self.movedIds = movedIds
        func entry(_ box: ContentBox?) throws(StoreError) -> KeyedContent? {
            guard let box else { return nil }
            return KeyedContent(StoredContents.Entry(
                matchId: matchId, text: try JSONColumn.encode(box.value, "content of match '\(matchId)'")))
        }
        sent = try entry(state.sent)
        held = try entry(state.held)
        updatedAt = SQLiteDateText.text(state.updatedAt)
    }

    /// Before the chunk's records are written: makes `state` the match's current shared state, unless it already is
    /// (a later chunk of the same fan-out). Members that the new state must not move keep theirs in their own rows
    /// first: those a failed fan-out left past its boundary (at the previous state), and those before this chunk's
    /// range (at the current one: chunks before it, with nothing to share, were not described).
    ///
    /// True when it left the boundary where `close` would put it: a last chunk that opens the state (a fan-out of one
    /// chunk, the most common) sets it open-ended at once, and nothing in between reads it.
    func open(_ db: Database) throws -> Bool {
        let values = try values(db)
        let read = try SQLiteRawStatement(db, sql: Self.readCurrentSQL)
        read.bind(1, matchId)
        let current = try read.first { () throws -> (values: StoredFanOutStates.Values, boundary: String?) in
            (try StoredFanOutStates.Values(read, at: 0, matchId: matchId),
             try read.text(Int32(Self.columns.count), "the fan-out state's boundary of match '\(matchId)'"))
        }
        guard let current else {
            let insert = try SQLiteRawStatement(db, sql: Self.insertSQL)
            insert.bind(1, matchId)
            values.bind(to: insert)
            try insert.run()
            return false
        }
        if current.values == values { return false }
        if let boundary = current.boundary {
            let detach = try SQLiteRawStatement(db, sql: Self.detachPastBoundarySQL)
            detach.bind(1, matchId)
            detach.bind(2, boundary)
            try detach.run()
        }
        let detach = try SQLiteRawStatement(db, sql: Self.detachBeforeRangeSQL)
        detach.bind(1, matchId)
        detach.bind(2, from)
        try detach.run()
        let open = try SQLiteRawStatement(db, sql: through == nil ? Self.openToTheEndSQL : Self.openSQL)
        open.bind(1, matchId)
        values.bind(to: open)
        try open.run()
        // The state two fan-outs back is nobody's now, unless an activity kept it in its own row.
        try pruning.pruneIfDue(matchId: matchId, db)
        return through == nil
    }

    // The statements `open` runs, written once (they were built anew for every chunk of every fan-out).
    private static let readCurrentSQL = "SELECT \(columns.joined(separator: ", ")), boundary FROM fanOutState WHERE matchId = ?"
    private static let insertSQL = """
        INSERT INTO fanOutState (matchId, \((columns + previous).joined(separator: ", ")), boundary)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '')
        """
    /// The new state current, the old one previous, every member at the previous one (boundary '') until the chunk
    /// is saved; or, for a last chunk, every member at the new one (boundary null).
    private static let openSQL = openSQL(boundary: "''")
    private static let openToTheEndSQL = openSQL(boundary: "NULL")
    private static func openSQL(boundary: String) -> String {
        let moves = zip(previous, columns).map { "\($0) = \($1)" } + columns.enumerated().map { "\($1) = ?\($0 + 2)" }
        return "UPDATE fanOutState SET \(moves.joined(separator: ", ")), boundary = \(boundary) WHERE matchId = ?1"
    }
    private static let detachPastBoundarySQL = detachSQL(previous, where: "id > ?2")
    private static let detachBeforeRangeSQL = detachSQL(columns, where: "id < ?2")

    /// After the chunk's records are written: the moved activities that were not members join, and the boundary
    /// moves past the chunk's range (never back: a chunk of a fan-out already complete leaves it open-ended), unless
    /// `open` put it there already (`boundarySet`).
    func close(_ db: Database, boundarySet: Bool) throws {
        let joining = try joining(db)
        if !joining.isEmpty {
            try db.cachedStatement(sql: """
                UPDATE activity SET shared = 1 WHERE id IN (SELECT value FROM json_each(?)) AND shared = 0 AND matchId = ?
                """).execute(arguments: [SQLiteStore.jsonArray(joining), matchId])
        }
        guard !boundarySet else { return }
        let move = try SQLiteRawStatement(db, sql: """
            UPDATE fanOutState SET boundary = CASE
                WHEN ?2 IS NULL OR boundary IS NULL THEN NULL WHEN boundary < ?2 THEN ?2 ELSE boundary END
            WHERE matchId = ?1
            """)
        move.bind(1, matchId)
        move.bind(2, through)
        try move.run()
    }

    /// The moved activities that are not members yet. They are among the open, started activities of the chunk's
    /// range that do not share the state, which `activity_unshared` (v12) holds apart: after the match's first fan-out
    /// those are few (the chunk's records written whole), so they are read, rather than each moved activity looked up.
    /// The statements name the index, whose condition they repeat: SQLite fails them rather than read another way.
    func joining(_ db: Database) throws -> [String] {
        guard !movedIds.isEmpty else { return [] }
        let select = try SQLiteRawStatement(db, sql: through == nil ? Self.unsharedToTheEnd : Self.unsharedThrough)
        select.bind(1, matchId)
        select.bind(2, from)
        if let through { select.bind(3, through) }
        var unshared = Set<String>()
        try select.forEach {
            if let id = try select.text(0, "an unshared activity's id of match '\(matchId)'") { unshared.insert(id) }
        }
        guard !unshared.isEmpty else { return [] }
        return movedIds.filter(unshared.contains)
    }

    static let unsharedThrough = unsharedSQL(bounded: true)
    static let unsharedToTheEnd = unsharedSQL(bounded: false)

    /// The unshared activities of match `?1` from id `?2`, through `?3` when `bounded` (a last chunk's range runs to the
    /// match's end). Two statements rather than a bound that may be null, so that the index's range ends at the bound:
    /// each chunk of a match's first fan-out, when every activity is unshared, reads its own range only.
    private static func unsharedSQL(bounded: Bool) -> String {
        """
        SELECT id FROM activity INDEXED BY activity_unshared
        WHERE matchId = ?1 AND id >= ?2\(bounded ? " AND id <= ?3" : "") AND shared = 0 AND phase IN ('starting', 'active')
        """
    }

    /// `state` as the columns' values, its contents stored.
    private func values(_ db: Database) throws -> StoredFanOutStates.Values {
        let contents = try ActivityBatch.contentIds([sent, held].compactMap { $0 }, db, pruning)
        return StoredFanOutStates.Values(
            lastTimestamp: state.lastTimestamp, sent: sent == nil ? nil : contents[0], sentAt: state.sentAt,
            sentStaleDate: state.sentStaleDate, held: held == nil ? nil : contents[contents.count - 1],
            heldStaleness: state.heldStaleness, updatedAt: updatedAt)
    }

    /// The members of match `?1` that `condition` selects (`?2` its bound) leave the shared state, keeping `source`
    /// (the current or the previous state) in their own rows, and the later of its update date and their own.
    private static func detachSQL(_ source: [String], where condition: String) -> String {
        let keeps = zip(columns, source).map { column, source in
            let value = "(SELECT \(source) FROM fanOutState WHERE matchId = ?1)"
            return column == "updatedAt" ? "updatedAt = max(updatedAt, \(value))" : "\(column) = \(value)"
        }
        return """
            UPDATE activity SET shared = 0, \(keeps.joined(separator: ", "))
            WHERE matchId = ?1 AND shared = 1 AND \(condition)
            """
    }
}

/// The shared states of the matches a write outside a fan-out touches, each read once: a record written whole stays
/// in (or joins) its match's shared state when it reads the same there, so registering an update token after a
/// fan-out does not make the next fan-out write the activity again.
struct StoredFanOutStates {
    /// A state's columns, current and previous, in the order `FanOutStateWrite` binds them; the update date last.
    static let columns = [
        "lastTimestamp", "sentContent", "sentAt", "sentStaleDate", "heldContent", "heldStaleness", "updatedAt",
    ]
    static let previous = columns.map { "prev" + $0.prefix(1).uppercased() + $0.dropFirst() }

    /// A state's values, in `columns`' order: what a fan-out writes into a match's row, and what a record written whole
    /// is compared with.
    struct Values: Equatable {
        var lastTimestamp: Int64
        var sent: Int64?
        var sentAt: Int64?
        var sentStaleDate: Int64?
        var held: Int64?
        var heldStaleness: Int64?
        var updatedAt: String

        init(
            lastTimestamp: Int, sent: Int64?, sentAt: Int?, sentStaleDate: Int?, held: Int64?, heldStaleness: Int64?,
            updatedAt: String
        ) {
            self.lastTimestamp = Int64(lastTimestamp)
            self.sent = sent
            self.sentAt = sentAt.map(Int64.init)
            self.sentStaleDate = sentStaleDate.map(Int64.init)
            self.held = held
            self.heldStaleness = heldStaleness
            self.updatedAt = updatedAt
        }

        /// Read from the current row's columns `offset` to `offset + 6`.
        init(_ row: SQLiteRawStatement, at offset: Int32, matchId: String) throws(StoreError) {
            let what = "the fan-out state of match '\(matchId)'"
            guard let lastTimestamp = try row.integer(offset, what), let updatedAt = try row.text(offset + 6, what) else {
                throw .corrupt("\(what) has no last timestamp or update date")
            }
            self.lastTimestamp = lastTimestamp
            sent = try row.integer(offset + 1, what)
            sentAt = try row.integer(offset + 2, what)
            sentStaleDate = try row.integer(offset + 3, what)
            held = try row.integer(offset + 4, what)
            heldStaleness = try row.integer(offset + 5, what)
            self.updatedAt = updatedAt
        }

        /// Bound as parameters 2 to 8 (the match is the first).
        func bind(to statement: SQLiteRawStatement) {
            statement.bind(2, lastTimestamp)
            statement.bind(3, sent)
            statement.bind(4, sentAt)
            statement.bind(5, sentStaleDate)
            statement.bind(6, held)
            statement.bind(7, heldStaleness)
            statement.bind(8, updatedAt)
        }
    }

    /// A match's current and previous states and its boundary.
    private static let readBothSQL =
        "SELECT \((columns + previous).joined(separator: ", ")), boundary FROM fanOutState WHERE matchId = ?1"

    private struct Both {
        var current: Values
        var previous: Values
        var boundary: String?
    }

    /// By match: its `fanOutState` row, or nil when it has none.
    private var rows: [String: Both?] = [:]

    /// Whether `record`, written with `values`, reads the same as a member of its match's shared state: open and
    /// started, at the state its id reads (the current one up to the boundary, the previous one past it), and updated
    /// no earlier (the view takes the later date).
    mutating func holds(_ record: ActivityRecord, values: @autoclosure () -> Values, _ db: Database) throws -> Bool {
        guard record.isOpen, record.phase != .waiting else { return false }
        let both: Both?
        if let read = rows[record.matchId] {
            both = read
        } else {
            let select = try SQLiteRawStatement(db, sql: Self.readBothSQL)
            select.bind(1, record.matchId)
            let count = Int32(Self.columns.count)
            both = try select.first {
                Both(
                    current: try Values(select, at: 0, matchId: record.matchId),
                    previous: try Values(select, at: count, matchId: record.matchId),
                    boundary: try select.text(2 * count, "the fan-out state's boundary of match '\(record.matchId)'"))
            }
            rows[record.matchId] = .some(both)
        }
        guard let both else { return false }
        let atCurrent = both.boundary.map { !ActivitySlots.precedes($0, record.activityId) } ?? true
        var state = atCurrent ? both.current : both.previous
        let values = values()
        guard state.updatedAt <= values.updatedAt else { return false }
        state.updatedAt = values.updatedAt
        return state == values
    }
}

extension SQLiteStore {
    public var keepsFanOutState: Bool { true }

    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, share: share, match: nil)
    }

    /// One write job, one savepoint: the match's row first, then the chunk (or, without a description, the records
    /// whole) and its deliveries.
    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], share: FanOutShare?, match: MatchRecord?
    ) async throws(StoreError) {
        let row = try match.map { record throws(StoreError) in try SQLiteMatchRow(record) }
        guard let share, !records.isEmpty else { return try await saveWhole(records, deliveries, match: row) }
        try await saveChunk(records, deliveries, share, match: row)
    }

    private func saveChunk(
        _ records: [ActivityRecord], _ deliveries: [Delivery], _ share: FanOutShare, match: SQLiteMatchRow?
    ) async throws(StoreError) {
        let chunk = try share.chunk(of: records)
        let batch = try ActivityBatch(written: chunk.written, share: share)
        let shared = try FanOutStateWrite(share, matchId: chunk.matchId, movedIds: chunk.movedIds, pruning: contentPruning)
        let queued = QueuedDeliveries(deliveries)
        try await write(
            "saving a fan-out chunk of \(records.count) activities with \(deliveries.count) deliveries",
            mayWait: Self.mayWait(activities: records.count, deliveries: deliveries.count)
        ) { db in
            try match?.write(db)
            let boundarySet = try shared.open(db)
            try batch.write(db, contentPruning)
            try shared.close(db, boundarySet: boundarySet)
            try queued.write(db, legacyOutbox)
        }
    }
}
