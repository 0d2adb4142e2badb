import Foundation
import MatchcastCore
import PostgresNIO
import Synchronization

// Saving activities with their deliveries: one statement, so one round trip and one transaction, whatever the size
// (`matchcast_save`, schema v7): the lease fence, the contents, the activities and the outbox chunk, arrays bound once
// and unnested on the server. A save whose deliveries span several matches (rare: a fan-out is one match) is one
// transaction with one such statement per run. When the database refuses the batch as a whole (a token held by
// another open activity, an unknown device, the same activity twice), the call is redone row by row in a new
// transaction, which applies `saveActivities`' rules record after record and names what is wrong.

extension PostgresStore {
    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, fence: nil, share: nil, match: nil)
    }

    /// With a fence, the leases' rows are taken first (`FOR SHARE`: a takeover waits for the save, and it for a
    /// takeover) and nothing is written unless each is still the fence's owner and generation. With a fan-out
    /// chunk's description, only the records that did not simply move are sent (`PostgresFanOutShare`). `match`, when
    /// given, is upserted in the same transaction, as `saveMatch` writes it (unfenced, as `saveMatch` is).
    func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence?, share: FanOutShare?,
        match: MatchRecord?
    ) async throws(StoreError) {
        guard !records.isEmpty || !deliveries.isEmpty else {
            if let match { try await saveMatch(match) }
            return
        }
        let row = try match.map { record throws(StoreError) in try MatchRow(record) }
        // Validated and taken apart before taking a connection: the transaction only runs SQL.
        let batch = if let share { try PostgresActivityBatch(records, share: share) } else { try PostgresActivityBatch(records) }
        let queued = PostgresQueuedRuns(deliveries)
        let logger = self.logger
        let what = deliveries.isEmpty
            ? (records.count == 1 ? "saving an activity" : "saving \(records.count) activities")
            : "saving \(records.count) activities with \(deliveries.count) deliveries"
        if batch.isBulkable, queued.runs.count <= 1 {
            let item = GroupedSave(batch: batch, run: queued.runs.first, fence: fence, match: row)
            // A few activities of one match with their deliveries (a fan-out to a match's few followers, a follow's
            // start): what `save(_:_:logger:)` orders its locks by.
            let mayWait = records.count <= Self.smallWrite && deliveries.count <= Self.smallWrite
                && queued.runs.first.map { run in records.allSatisfy { $0.matchId == run.matchId } } == true
            let turn = await saves.turn(for: item, mayWait: mayWait) { items async throws(StoreError) in
                try await self.withConnection("saving \(items.count) groups of activities with deliveries") { connection in
                    try await Self.save(items, connection, logger: logger)
                }
            }
            if case .done(let outcome) = turn {
                try outcome.get()
                return
            }
        }
        if batch.isBulkable {
            do {
                try await withConnection(what) { connection in
                    guard queued.runs.count > 1 || row != nil else {
                        try await Self.save(batch, queued.runs.first, fence: fence, connection, logger: logger)
                        return
                    }
                    try await Self.inTransaction(connection, logger: logger) { connection in
                        try await Self.save(batch, queued.runs.first, fence: fence, connection, logger: logger)
                        for run in queued.runs.dropFirst() {
                            try await Self.save(nil, run, fence: nil, connection, logger: logger)
                        }
                        if let row { try await Self.save([row], connection, logger: logger) }
                    }
                }
                return
            } catch let error where error == .conflict || error == .notFound {
                // Refused as a whole: redone row by row below, which says which record and why.
            }
        }
        // Every record written whole with its own state, a fan-out chunk's moved ones too: right whatever the
        // match's shared state.
        let each = batch.share == nil ? batch : try PostgresActivityBatch(records)
        try await transaction(what) { connection in
            if let fence { try await Self.checkFence(fence, connection, logger: logger) }
            try await Self.requireDevices(records.map(\.deviceId), connection, logger: logger)
            let contentIds = try await Self.contentIds(each.contents.entries, connection, logger: logger)
            try await each.writeEach(contentIds: contentIds, connection, logger: logger)
            for run in queued.runs { try await Self.save(nil, run, fence: nil, connection, logger: logger) }
            if let row { try await Self.save([row], connection, logger: logger) }
        }
    }

    /// One `matchcast_save`: the fence (when given), `batch`'s contents, activities and fan-out chunk (when given)
    /// and `run` (when given). Throws `.leaseLost` when the fence no longer holds, in which case nothing was written.
    static func save(
        _ batch: PostgresActivityBatch?, _ run: PostgresQueuedRuns.Run?, fence: LeaseFence?,
        _ connection: PostgresConnection, logger: Logger
    ) async throws {
        var bindings = PostgresBindings(capacity: SaveStatement.parameterTypes.count)
        bind(batch, run, fence: fence, into: &bindings)
        var lost: String?
        for try await row in try await connection.execute(SaveStatement(bindings: bindings), logger: logger) {
            lost = row
        }
        if let lost, let fence { throw leaseLost(lost, fence) }
    }

    /// One `matchcast_save`'s parameters.
    private static func bind(
        _ batch: PostgresActivityBatch?, _ run: PostgresQueuedRuns.Run?, fence: LeaseFence?,
        into bindings: inout PostgresBindings
    ) {
        let matchIds = fence?.generations.keys.sorted() ?? []
        bindings.append(fence?.owner)
        bindings.append(matchIds)
        bindings.append(matchIds.map { Int64(fence?.generations[$0] ?? 0) })
        if let batch {
            batch.bind(into: &bindings)
        } else {
            PostgresActivityBatch.bindNone(into: &bindings)
        }
        if let run {
            run.bind(into: &bindings)
        } else {
            PostgresQueuedRuns.Run.bindNone(into: &bindings)
        }
        if let share = batch?.share {
            share.bind(into: &bindings)
        } else {
            PostgresFanOutShare.bindNone(into: &bindings)
        }
    }

    private static func leaseLost(_ matchId: String, _ fence: LeaseFence) -> StoreError {
        .leaseLost("match '\(matchId)' is no longer leased to '\(fence.owner)'")
    }

    /// One save of a few activities with their deliveries (of one match), sent with others (`saves`).
    struct GroupedSave: Sendable {
        let batch: PostgresActivityBatch
        let run: PostgresQueuedRuns.Run?
        let fence: LeaseFence?
        /// The match's new state, upserted in the same statement (a change's first fan-out chunk).
        var match: MatchRow?
    }

    /// Several saves in one statement, one `matchcast_save` each, in the order given: one round trip, one
    /// transaction. A save whose fence no longer holds writes nothing (`matchcast_save` checks it first) and fails
    /// alone with `.leaseLost`; any error fails the statement as a whole, and nothing of it is written.
    ///
    /// Locks are taken in one order by every statement, so that none can deadlock with this one: each save takes its
    /// match's rows (lease, fan-out state, activities), and the saves run in match id order, the order a lease renewal
    /// locks leases in; each save also locks the queued chunks its deliveries replace, which the relay's removal locks
    /// in chunk id order, so the statement first locks every queued chunk of its matches, in chunk id order. Before
    /// that it takes the contents' locks of its matches, shared (`matchcast_lock_contents`, schemas v12 and v14), which
    /// each `matchcast_save` takes first; a pruning chunk's try for its match's, for itself, never waits.
    static func save(
        _ given: [GroupedSave], _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Result<Void, StoreError>] {
        let order = given.indices.sorted { (given[$0].run?.matchId ?? "", $0) < (given[$1].run?.matchId ?? "", $1) }
        let items = order.map { given[$0] }
        let width = SaveStatement.parameterTypes.count
        var bindings = PostgresBindings(capacity: width * items.count + 2)
        var matches = Set<String>(), written = Set<String>()
        for item in items {
            if let run = item.run { matches.insert(run.matchId) }
            for record in item.batch.records { written.insert(record.matchId) }
            for entry in item.batch.contents.entries { written.insert(entry.matchId) }
            if let share = item.batch.share { written.insert(share.matchId) }
        }
        bindings.append(PostgresTextArray(matches.sorted()))
        bindings.append(PostgresTextArray(written.sorted()))
        for item in items { bind(item.batch, item.run, fence: item.fence, into: &bindings) }
        // The matches' rows, as `saveMatch` writes them: written whatever the saves' fences say, as `saveMatch` is.
        let rows = MatchRow.lastOfEach(items.compactMap(\.match))
        if !rows.isEmpty { MatchRow.bind(rows, into: &bindings) }
        var outcomes = [Result<Void, StoreError>](repeating: .success(()), count: given.count)
        let sql = groupedSaveSQL(count: items.count, withMatches: !rows.isEmpty)
        let answer = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
        for try await (position, lost) in answer.decode((Int, String?).self) {
            guard items.indices.contains(position) else { continue }  // -3: the matches; -2, -1: the locks
            if let lost, let fence = items[position].fence { outcomes[order[position]] = .failure(leaseLost(lost, fence)) }
        }
        return outcomes
    }

    /// The statement of `count` grouped saves (`save(_:_:logger:)`), with the matches' rows or without, made once
    /// per count and form. The rows' upsert is a data-modifying `WITH`: it runs once, whatever the query reads of it.
    static func groupedSaveSQL(count: Int, withMatches: Bool) -> String {
        let key = withMatches ? -count : count
        if let made = groupedSaveStatements.withLock({ $0[key] }) { return made }
        let width = SaveStatement.parameterTypes.count
        var sql = withMatches
            ? "WITH saved_match AS (\(MatchRow.upsertSQL(from: 3 + count * width)) RETURNING 1) "
                + "SELECT -3, (SELECT count(*) FROM saved_match)::text UNION ALL "
            : ""
        sql += """
            SELECT -2, matchcast_lock_contents($2::text[], '{}'::text[])::text
            UNION ALL SELECT -1, (SELECT count(*) FROM (SELECT 1 FROM outbox_chunk WHERE match_id = ANY($1::text[])
                ORDER BY id FOR UPDATE) AS locked)::text
            """
        for position in 0..<count {
            sql += " UNION ALL SELECT \(position)::integer, matchcast_save(\(SaveStatement.parameters(from: 3 + position * width)))"
        }
        groupedSaveStatements.withLock { $0[key] = sql }
        return sql
    }

    private static let groupedSaveStatements = Mutex<[Int: String]>([:])

    /// `matchcast_save`, prepared once per connection: returns the first match whose lease the fence lost, if any.
    struct SaveStatement: PostgresPreparedStatement {
        static let sql = "SELECT matchcast_save(\(parameters(from: 1)))"
        /// `matchcast_save`'s parameters, in order (its definition: `PostgresStore+MigrationV7.swift`).
        static let parameterTypes = [
            "text", "text[]", "bigint[]", "text[]", "text[]", "text[]", "text[]", "text[]", "text[]", "text[]",
            "text[]", "bigint[]", "integer[]", "bigint[]", "bigint[]", "bigint[]", "integer[]", "bigint[]",
            "boolean[]", "integer[]", "text[]", "timestamptz[]", "text", "text", "text", "text[]", "text[]",
            "integer[]", "bigint[]", "bytea[]", "text[]", "text[]", "text[]", "text[]", "text[]", "integer[]",
            "text", "text[]", "bigint", "integer", "bigint", "bigint", "integer", "bigint", "timestamptz", "text",
            "text",
        ]
        var bindings: PostgresBindings

        func makeBindings() -> PostgresBindings { bindings }

        func decodeRow(_ row: PostgresRow) throws -> String? { try row.decode(String?.self) }

        /// `$first::type, ...`: one call's parameters, numbered from `first`.
        static func parameters(from first: Int) -> String {
            parameterTypes.enumerated().map { "$\(first + $0.offset)::\($0.element)" }.joined(separator: ", ")
        }
    }

    /// The id of each distinct content's row, added when the match has no row with that text yet (the row-by-row
    /// path, inside its transaction; `matchcast_save` does the same on the server).
    static func contentIds(
        _ entries: [StoredContents.Entry], _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        let matchIds = entries.map(\.matchId)
        let texts = entries.map(\.text)
        // Held to the end of the caller's transaction: no pruning deletes a row between its look-up and the write
        // that refers to it (`PostgresStore+MigrationV12.swift`).
        try await connection.query("SELECT matchcast_lock_contents(\(matchIds)::text[], '{}'::text[])", logger: logger)
            .consume()
        try await connection.query(
            """
            INSERT INTO content_state (match_id, content) SELECT * FROM unnest(\(matchIds)::text[], \(texts)::text[])
            ON CONFLICT (match_id, md5(content)) DO NOTHING
            """,
            logger: logger
        ).consume()
        let rows = try await connection.query(
            """
            SELECT u.n, c.id FROM unnest(\(matchIds)::text[], \(texts)::text[]) WITH ORDINALITY AS u(m, t, n)
            JOIN content_state c ON c.match_id = u.m AND md5(c.content) = md5(u.t) AND c.content = u.t
            """,
            logger: logger
        ).collect((Int64, Int64).self)
        var ids = [Int64](repeating: -1, count: entries.count)
        for (ordinal, id) in rows { ids[Int(ordinal) - 1] = id }
        guard !ids.contains(-1) else {
            throw StoreError.database("a content-state row vanished while it was saved")
        }
        return ids
    }
}

/// Activity records as columns for `matchcast_save`: per column either one value per record or, when every record has
/// the same (a fan-out chunk's match, phase, content, dates), that value once.
struct PostgresActivityBatch: Sendable {
    /// The records written: for a fan-out chunk, those that did not simply move with it.
    let records: [ActivityRecord]
    let contents: StoredContents
    /// Each activity at most once: one `UPDATE ... FROM` may not touch a row twice.
    let isBulkable: Bool
    /// The fan-out chunk the records are, when they are one.
    let share: PostgresFanOutShare?

    /// Nullable numbers travel in arrays as this value (`NULLIF` on the server): PostgresNIO binds no NULL elements.
    static let none = Int64.min

    init(_ records: [ActivityRecord]) throws(StoreError) {
        self.init(records, contents: try StoredContents(records), share: nil)
    }

    /// A fan-out chunk: its records but the moved ones, and the chunk's state, its contents among the batch's.
    init(_ records: [ActivityRecord], share: FanOutShare) throws(StoreError) {
        let chunk = try share.chunk(of: records)
        var contents = try StoredContents(chunk.written)
        let described = try PostgresFanOutShare(share, matchId: chunk.matchId, movedIds: chunk.movedIds, contents: &contents)
        self.init(chunk.written, contents: contents, share: described)
    }

    private init(_ records: [ActivityRecord], contents: StoredContents, share: PostgresFanOutShare?) {
        self.records = records
        self.contents = contents
        self.share = share
        var seen = Set<String>(minimumCapacity: records.count)
        var distinct = true
        for index in records.indices where !seen.insert(records[index].activityId).inserted {
            distinct = false
            break
        }
        isBulkable = distinct
    }

    /// `matchcast_save`'s parameters 4 to 22: the contents, then the activities' columns.
    func bind(into bindings: inout PostgresBindings) {
        bindings.append(contents.entries.map(\.matchId))
        bindings.append(contents.entries.map(\.text))
        let count = records.count
        let stored = contents.stored, refs = contents.refs
        bindings.append(PostgresTextArray(records.map(\.activityId)))
        Self.text(count, into: &bindings) { records[$0].deviceId }
        Self.text(count, into: &bindings) { records[$0].matchId }
        Self.text(count, into: &bindings) { records[$0].environment.rawValue }
        Self.text(count, into: &bindings) { stored[$0].phase.rawValue }
        Self.text(count, into: &bindings) { stored[$0].updateToken ?? "" }
        Self.column(count, into: &bindings) { Int64(stored[$0].lastTimestamp) }
        Self.column(count, into: &bindings) { refs[$0].sent + 1 }
        Self.column(count, into: &bindings) { stored[$0].sentAt.map(Int64.init) ?? Self.none }
        Self.column(count, into: &bindings) { stored[$0].sentStaleDate.map(Int64.init) ?? Self.none }
        Self.column(count, into: &bindings) { stored[$0].startedAt.map(Int64.init) ?? Self.none }
        Self.column(count, into: &bindings) { refs[$0].held + 1 }
        Self.column(count, into: &bindings) { stored[$0].heldStaleness ?? Self.none }
        Self.column(count, into: &bindings) { stored[$0].endHeld }
        Self.column(count, into: &bindings) { refs[$0].final + 1 }
        Self.text(count, into: &bindings) { stored[$0].channelId ?? "" }
        Self.column(count, into: &bindings) { records[$0].updatedAt.storedPrecision }
    }

    /// The same parameters for a call that saves no activity.
    static func bindNone(into bindings: inout PostgresBindings) {
        for _ in 0..<2 { bindings.append([String]()) }
        for _ in 0..<6 { bindings.append([String]()) }
        bindings.append([Int64]())
        bindings.append([Int32]())
        for _ in 0..<3 { bindings.append([Int64]()) }
        bindings.append([Int32]())
        bindings.append([Int64]())
        bindings.append([Bool]())
        bindings.append([Int32]())
        bindings.append([String]())
        bindings.append([Date]())
    }

    /// One column: `value` of every record, or only the first record's when all are equal (`unnest` pads the other
    /// rows with NULL, and `matchcast_save` reads the first value for them).
    private static func column<Value: PostgresArrayEncodable & PostgresNonThrowingEncodable & Equatable>(
        _ count: Int, into bindings: inout PostgresBindings, _ value: (Int) -> Value
    ) {
        bindings.append(values(count, value))
    }

    /// A text column, as `column` and written by `PostgresTextArray`.
    private static func text<Text: PostgresTextElement & Equatable>(
        _ count: Int, into bindings: inout PostgresBindings, _ value: (Int) -> Text
    ) {
        bindings.append(PostgresTextArray(values(count, value)))
    }

    private static func values<Value: Equatable>(_ count: Int, _ value: (Int) -> Value) -> [Value] {
        guard count > 0 else { return [] }
        let first = value(0)
        var position = 1
        while position < count, value(position) == first { position += 1 }
        guard position < count else { return [first] }
        var values = [Value]()
        values.reserveCapacity(count)
        for index in 0..<count { values.append(value(index)) }
        return values
    }

    /// Record after record, each checked against the store as the records before it left it.
    func writeEach(contentIds: [Int64], _ connection: PostgresConnection, logger: Logger) async throws {
        func id(_ ref: Int32) -> Int64? { ref < 0 ? nil : contentIds[Int(ref)] }
        for position in records.indices {
            let record = records[position]
            let stored = contents.stored[position]
            let refs = contents.refs[position]
            if record.isOpen, let token = record.updateToken {
                // The unique index on open tokens is the backstop for two writers at once; this names the holder.
                let holder = try await connection.query(
                    """
                    SELECT id FROM activity
                    WHERE update_token = \(token) AND open AND id <> \(record.activityId) LIMIT 1
                    """,
                    logger: logger
                ).collect(String.self).first
                if let holder {
                    throw StoreError.conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holder)'")
                }
            }
            let sentAt = stored.sentAt.map(Int64.init), stale = stored.sentStaleDate.map(Int64.init)
            let startedAt = stored.startedAt.map(Int64.init)
            let (sent, held, final) = (id(refs.sent), id(refs.held), id(refs.final))
            try await connection.query(
                """
                INSERT INTO activity_row (id, device_id, match_id, environment, phase, update_token, last_timestamp,
                    sent_content, sent_at, sent_stale_date, started_at, held_content, held_staleness, end_held,
                    final_content, channel_id, updated_at)
                VALUES (\(record.activityId), \(record.deviceId), \(record.matchId), \(record.environment.rawValue),
                    \(stored.phase.rawValue), \(stored.updateToken?.string), \(Int64(stored.lastTimestamp)), \(sent), \(sentAt),
                    \(stale), \(startedAt), \(held), \(stored.heldStaleness), \(stored.endHeld), \(final),
                    \(stored.channelId), \(record.updatedAt.storedPrecision))
                ON CONFLICT (id) DO UPDATE SET
                    device_id = excluded.device_id, match_id = excluded.match_id, environment = excluded.environment,
                    phase = excluded.phase, update_token = excluded.update_token, last_timestamp = excluded.last_timestamp,
                    sent_content = excluded.sent_content, sent_at = excluded.sent_at,
                    sent_stale_date = excluded.sent_stale_date, started_at = excluded.started_at,
                    held_content = excluded.held_content, held_staleness = excluded.held_staleness,
                    end_held = excluded.end_held, final_content = excluded.final_content,
                    channel_id = excluded.channel_id, updated_at = excluded.updated_at, shared = false
                """,
                logger: logger
            ).consume()
        }
    }
}
