import Synchronization
internal import GRDB

/// Takes out of `contentState` the contents of a match that nothing refers to any more.
///
/// Every distinct content a match's activities were sent or held gets a row (`SQLiteStore.contentIds`), and a match
/// changes what it shows hundreds of times (each goal, each minute of its clock; each ball of a cricket match), while
/// its activities and its fan-out state refer to a handful of those rows at any time. Left alone, the table (and its
/// index) grows by every change of every match the store ever ran.
///
/// When a fan-out opens a new shared state, the match's rows are counted; once they reach `minimum` and twice what
/// the last pruning of the match kept, the rows that no column of any of the match's activities (shared or not: a
/// shared row's own columns are kept too, so no id anything holds is ever freed) and none of its fan-out state's four
/// refers to are deleted, in the fan-out's own transaction. The store has one writer, so nothing can take a row between
/// the check and the delete. A match whose activities keep many contents apart (many ended mid-match, each at what it
/// last showed) is pruned as its rows double, not at every fan-out: each pruning reads all the match's activities.
final class SQLiteContentPruning: Sendable {
    /// Rows a match may have before its first pruning.
    static let minimum = 64
    /// Matches remembered at most; past it the memory starts again (a match then prunes once more than it needed).
    static let remembered = 10_000

    /// By match: the rows its last pruning kept.
    private let kept = Mutex<[String: Int]>([:])

    init() {}

    /// Prunes the match's contents when due (see the type's comment), inside the caller's write transaction.
    func pruneIfDue(matchId: String, _ db: Database) throws {
        let count = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM contentState WHERE matchId = ?"), arguments: [matchId]) ?? 0
        let last = kept.withLock { $0[matchId] ?? 0 }
        guard count >= max(Self.minimum, 2 * last) else { return }
        try db.cachedStatement(sql: Self.pruneSQL).execute(arguments: [matchId])
        let left = count - db.changesCount
        kept.withLock { kept in
            if kept.count >= Self.remembered { kept.removeAll() }
            kept[matchId] = left
        }
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
