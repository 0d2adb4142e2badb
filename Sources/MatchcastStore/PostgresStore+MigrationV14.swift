import Foundation

// Schema v14: a fan-out chunk no longer holds its match's contents' lock for itself; it prunes only when it can take
// the lock for itself at once.
//
// From v12 every fan-out chunk took its match's contents' lock for itself, to the end of its transaction, so that no
// other save could look a content's id up between the pruning's look at what is kept and its delete. But pruning is
// due once in 64 changes or more, and the lock made every other save of the match wait for every chunk: a follow of a
// live match saves its activity's start, and waited for the match's fan-out, and for the commit of the grouped
// statement the chunk went out in (docs/performance-history.md, "A follow waits for its match's fan-out since v12").
//
// - `matchcast_lock_contents` takes every lock shared, `own` too (its callers keep their arguments).
// - `matchcast_save`'s pruning, when due, first tries to take the lock for itself without waiting
//   (`pg_try_advisory_xact_lock`). A transaction's own shared lock does not stand in its way; another's does, and then
//   the pruning waits for a later fan-out of the match. Taken, it is held to the end of the transaction, as before:
//   a save that comes after waits for it, and looks its ids up once the pruning is committed. Two chunks that try at
//   once both hold the lock shared, so neither takes it and neither waits: no deadlock.
// - Only adds for an older build: the functions keep their signatures, and a v12 or v13 build's saves go through them.

extension PostgresStore {
    static let v14 = Migration(name: "v14", statements: [
        """
        CREATE OR REPLACE FUNCTION matchcast_lock_contents(matches text[], own text[]) RETURNS integer
        LANGUAGE plpgsql AS $lock$
        DECLARE
            m text;
            taken integer := 0;
        BEGIN
            -- Shared, `own` too (v14): a fan-out chunk's pruning takes the lock for itself only when it can at once.
            FOR m IN
                SELECT DISTINCT u COLLATE "C" AS k FROM unnest(matches || own) AS u WHERE u IS NOT NULL ORDER BY k
            LOOP
                PERFORM pg_advisory_xact_lock_shared(matchcast_contents_key(m));
                taken := taken + 1;
            END LOOP;
            RETURN taken;
        END
        $lock$
        """,
        // v12's pruning, run only when the chunk takes its match's contents' lock for itself at once. A `CASE`, not an
        // `AND`: PostgreSQL does not promise to evaluate an `AND`'s operands in order, and the lock must not be taken
        // when no pruning is due. In parentheses: PL/pgSQL ends an `IF`'s condition at its first `THEN`.
        pruningSave(opened: pruneContents(when: "(CASE WHEN counted >= greatest(64, 2 * st.contents_kept)\n"
            + "                        THEN pg_try_advisory_xact_lock(matchcast_contents_key(s_match)) ELSE false END)")),
    ], readers: .any)
}
