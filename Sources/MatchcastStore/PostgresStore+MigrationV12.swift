import Foundation

// Schema v12: a match's contents that nothing refers to any more are deleted, as SQLite prunes them
// (`SQLiteContentPruning`). `content_state` keeps a row per distinct content of a match, and a match changes what it
// shows hundreds of times while its activities and its fan-out state refer to a handful of those rows at any time.
//
// - `matchcast_save` is replaced (same signature): when a fan-out chunk opens a new state for its match, the match's
//   rows are counted, and once they reach 64 and twice what its last pruning kept (`fan_out_state.contents_kept`), the
//   rows that no column of any of the match's activities (a shared row's own columns too), none of its state's four
//   and none of the save's own contents refer to are deleted, in the chunk's transaction.
// - A save looks a content's id up before it writes the rows that refer to it, so a pruning between the two would leave
//   a reference to a deleted row. The contents' lock closes that (`matchcast_lock_contents`: an advisory lock per match
//   and schema, `matchcast_contents_key`, held to the end of the transaction): a fan-out chunk takes its match's for
//   itself, any other save that writes a match's contents or activities shares it, before it looks anything up. They
//   are taken in match order by code point, the order of every other lock of a match, and before the row locks a save
//   takes on its match (a grouped save's statement takes them before its chunks' locks), so they add no cycle: a save
//   that waited on a fan-out chunk for the state's row lock now waits for it at the contents' lock, first. The
//   row-by-row path (`PostgresStore.contentIds`) shares it too.
// - Reads are two statements (the activities, then the contents they refer to): one that finds a content gone, pruned
//   between them, reads again (`PostgresStore.activities`).
// - Only adds for an older build: it calls the same function and reads no new column. Its row-by-row path and its
//   grouped saves' first locks do not take the lock, but it only writes a match its lease lets it write, and the
//   pruning is its lease owner's fan-out.

extension PostgresStore {
    /// The contents' locks, before anything is looked up (see the file's comment): every match whose contents or
    /// activities the save writes (the records' too: a save of records without contents still waits on its match's
    /// state), its fan-out chunk's match for itself.
    private static let saveContentsLock = """
            -- The contents' locks (v12): no pruning may delete a row between the look-up of its id below and the write
            -- that refers to it.
            PERFORM matchcast_lock_contents(content_matches || a_match, ARRAY[s_match]);
        """

    /// What a fan-out chunk does once it has opened a new state for its match (v12): the pruning, when due. What is
    /// kept is gathered first, as distinct column values (a fan-out's activities share a few), into an array: a
    /// `NOT IN` over the activities' rows would be re-run for every content row once the planner thinks it too big
    /// to hash. It runs when `condition` holds: v12's is that it is due; v14 adds that the chunk takes the lock at once.
    static func pruneContents(when condition: String) -> String {
        """

                    -- The match's contents that nothing refers to any more go (v12), once there are at least 64
                    -- and twice what the last pruning kept. This chunk's own contents stay: its rows are written next.
                    SELECT count(*) INTO counted FROM content_state WHERE match_id = s_match;
                    IF \(condition) THEN
                        kept := contents || ARRAY(
                            SELECT r.id FROM (
                                SELECT DISTINCT sent_content, held_content, final_content FROM activity_row
                                WHERE match_id = s_match
                            ) AS a, unnest(ARRAY[a.sent_content, a.held_content, a.final_content]) AS r(id)
                            WHERE r.id IS NOT NULL
                            UNION SELECT r.id FROM fan_out_state AS f,
                                unnest(ARRAY[f.sent_content, f.held_content, f.prev_sent_content, f.prev_held_content])
                                    AS r(id)
                            WHERE f.match_id = s_match AND r.id IS NOT NULL);
                        DELETE FROM content_state WHERE match_id = s_match AND id <> ALL(kept);
                        GET DIAGNOSTICS pruned = ROW_COUNT;
                        UPDATE fan_out_state SET contents_kept = counted - pruned WHERE match_id = s_match;
                    END IF;
        """
    }

    static let v12 = Migration(name: "v12", statements: [
        "ALTER TABLE fan_out_state ADD COLUMN contents_kept bigint NOT NULL DEFAULT 0",
        // Per schema: stores of several schemas share one database (tests do), and their match ids may be the same.
        """
        CREATE FUNCTION matchcast_contents_key(match text) RETURNS bigint
        LANGUAGE sql STABLE AS $key$
            SELECT hashtextextended('matchcast.contents.' || COALESCE(current_schema(), '') || '.' || match, 0)
        $key$
        """,
        // Takes the contents' lock of each of `matches` and `own` (for itself for `own`, shared for the others), in
        // match order by code point, as every other lock of a match is taken: `matchcast_save`, the row-by-row path
        // and a grouped save's statement (before its chunks' locks) all go through it.
        """
        CREATE FUNCTION matchcast_lock_contents(matches text[], own text[]) RETURNS integer
        LANGUAGE plpgsql AS $lock$
        DECLARE
            m text;
            taken integer := 0;
        BEGIN
            FOR m IN
                SELECT DISTINCT u COLLATE "C" AS k FROM unnest(matches || own) AS u WHERE u IS NOT NULL ORDER BY k
            LOOP
                IF m = ANY(own) THEN
                    PERFORM pg_advisory_xact_lock(matchcast_contents_key(m));
                ELSE
                    PERFORM pg_advisory_xact_lock_shared(matchcast_contents_key(m));
                END IF;
                taken := taken + 1;
            END LOOP;
            RETURN taken;
        END
        $lock$
        """,
        pruningSave(opened: pruneContents(when: "counted >= greatest(64, 2 * st.contents_kept)")),
    ], readers: .any)

    /// `matchcast_save` as v12 replaced it (its contents' locks first), with `opened` run when a fan-out chunk opens a new
    /// state for its match; v14 replaces it again with another `opened`.
    static func pruningSave(opened: String) -> String {
        saveFunction(
            create: "CREATE OR REPLACE FUNCTION", fenceAndContents: saveFence + "\n\n" + saveContentsLock + "\n\n" + saveContents,
            variables: "\n    counted bigint;\n    kept bigint[];\n    pruned bigint;", opened: opened)
    }
}
