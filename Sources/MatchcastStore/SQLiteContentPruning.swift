import Synchronization
internal import GRDB

/// Takes out of `contentState` the contents of a match that nothing refers to any more.
///
/// Every distinct content a match's activities were sent or held gets a row (`SQLiteStore.contentIds`), and a match
/// changes what it shows hundreds of times (each goal, each minute of its clock; each ball of a cricket match), while
/// its activities and its fan-out state refer to a handful of those rows at any time. Left alone, the table (and its
/// index) grows by every change of every match the store ever ran.
///
/// When a fan-out opens a new shared state and the match may have reached `minimum` rows and twice what its last
/// pruning kept, its rows are counted; if they have, the rows that no column of any of the match's activities (shared
/// or not: a shared row's own columns are kept too, so no id anything holds is ever freed) and none of its fan-out
/// state's four refers to are deleted, in the fan-out's own transaction. The store has one writer, so nothing can take
/// a row between the check and the delete. A match whose activities keep many contents apart (many ended mid-match,
/// each at what it last showed) is pruned as its rows double, not at every fan-out: each pruning reads all the match's
/// activities.
///
/// Whether a match may have reached that is known without counting: every row is added through `added(matchId:)`
/// (`ActivityBatch.contentIds`), so the count taken last plus the rows added since bounds what the match has: its rows
/// are counted when a pruning may be due, not at every fan-out. A write rolled back after adding rows leaves the bound
/// high (a count comes sooner); one rolled back after a pruning leaves it low, and the match's next pruning comes that
/// many rows later.
final class SQLiteContentPruning: Sendable {
    /// Rows a match may have before its first pruning.
    static let minimum = 64
    /// Matches remembered at most; past it the memory starts again (a match then counts its rows once more).
    static let remembered = 10_000

    private struct Tally {
        /// At most the rows the match has: those counted last, plus those added since.
        var rows: Int
        /// The rows its last pruning kept.
        var kept: Int
    }

    /// By match, once its rows were counted.
    private let tallies = Mutex<[String: Tally]>([:])
    private let counts = Atomic<Int>(0)

    /// How many times a match's rows were counted (tests).
    var countsTaken: Int { counts.load(ordering: .relaxed) }

    init() {}

    /// A row added to the match's contents, inside the writer's transaction.
    func added(matchId: String) {
        tallies.withLock { tallies in
            tallies[matchId]?.rows += 1
        }
    }

    /// Prunes the match's contents when due (see the type's comment), inside the caller's write transaction.
    func pruneIfDue(matchId: String, _ db: Database) throws {
        let known = tallies.withLock { $0[matchId] }
        if let known, known.rows < Self.threshold(kept: known.kept) { return }
        counts.add(1, ordering: .relaxed)
        let count = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?"), arguments: [matchId]) ?? 0
        let kept = known?.kept ?? 0
        var tally = Tally(rows: count, kept: kept)
        if count >= Self.threshold(kept: kept) {
            try db.cachedStatement(sql: Self.pruneSQL).execute(arguments: [matchId])
            let left = count - db.changesCount
            tally = Tally(rows: left, kept: left)
        }
        tallies.withLock { tallies in
            if tallies.count >= Self.remembered, tallies[matchId] == nil { tallies.removeAll() }
            tallies[matchId] = tally
        }
    }

    /// The rows at which a match whose last pruning kept `kept` is pruned again.
    private static func threshold(kept: Int) -> Int {
        max(minimum, 2 * kept)
    }

    /// What is kept is read from the match's activities in one pass, as their distinct (sent, held, final) triples: a
    /// handful, where a `UNION` of each column read the activities three times.
    private static let pruneSQL = """
        WITH kept(sent, held, final) AS (
            SELECT DISTINCT sentContent, heldContent, finalContent FROM activity WHERE matchId = ?1)
        DELETE FROM contentState WHERE matchId = ?1 AND id NOT IN (
            SELECT sent FROM kept WHERE sent IS NOT NULL
            UNION SELECT held FROM kept WHERE held IS NOT NULL
            UNION SELECT final FROM kept WHERE final IS NOT NULL
            UNION SELECT sentContent FROM fanOutState WHERE matchId = ?1 AND sentContent IS NOT NULL
            UNION SELECT heldContent FROM fanOutState WHERE matchId = ?1 AND heldContent IS NOT NULL
            UNION SELECT prevSentContent FROM fanOutState WHERE matchId = ?1 AND prevSentContent IS NOT NULL
            UNION SELECT prevHeldContent FROM fanOutState WHERE matchId = ?1 AND prevHeldContent IS NOT NULL)
        """
}
