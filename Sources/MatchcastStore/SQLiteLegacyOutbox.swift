import Synchronization
internal import GRDB

/// Whether `outbox`, the queue of schema versions before v5 (one row per delivery), may still hold rows. Nothing adds
/// to it any more: a database upgraded with deliveries queued there keeps them until they are sent, and from then on
/// the table stays empty, so the writes of every fan-out and removal stop asking.
///
/// Known empty only from what is committed (the store opened, or a read of the queue): a write that saw the last
/// legacy rows gone inside its own transaction could still be rolled back, which would bring them back.
final class SQLiteLegacyOutbox: Sendable {
    private let empty = Atomic<Bool>(false)

    /// Whether a committed read found the table empty (tests).
    var isKnownEmpty: Bool { empty.load(ordering: .relaxed) }

    /// Notes what a read of committed rows found.
    func read(found rows: Bool) {
        if !rows { empty.store(true, ordering: .relaxed) }
    }

    /// Reads the table, outside any write (the store opening).
    func check(_ db: Database) throws {
        read(found: try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM outbox)")) == true)
    }

    /// Whether the table may hold rows, inside a write: false without a statement once known empty.
    func mayHoldRows(_ db: Database) throws -> Bool {
        if isKnownEmpty { return false }
        return try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM outbox)")) == true
    }
}
