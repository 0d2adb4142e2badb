import Foundation

// Schema v8: a fan-out's sent state kept once per match, as SQLite's v6/v7 (`SQLiteStore+FanOutState.swift`).
//
// - `fan_out_state`: per match, the state a fan-out moves every activity to (its last timestamp, sent content, sent
//   and stale dates, held content and staleness, update date), the previous one, and a boundary. An activity with
//   `shared` reads the current state if its id is at most the boundary (or the boundary is null), the previous one
//   otherwise, and the later of its own update date and the state's.
// - The table is renamed `activity_row` and `activity` becomes the view that resolves those columns, so every read,
//   this build's and an older one's still running, sees what was saved. Writes go to `activity_row`; a delete
//   through the view still works (an older build deletes through it).
// - `matchcast_save(...)` gains a fan-out chunk's description (`s_*`, `PostgresFanOutShare`): it opens the match's new
//   state at the fan-out's first chunk (members it must not move keep theirs in their own rows), moves the boundary
//   past the chunk, writes only the records that did not simply move, and joins the moved ones that were not members
//   (`shared` set), in the same statement and transaction as before. A record written whole stays in or joins its
//   match's state when it reads the same there and is updated no earlier, so an update token registered after a
//   fan-out does not make the next one write the activity again. v7's signature (an older build's) is kept: it calls
//   the new one without a description, so its writes keep the same rules.

extension PostgresStore {
    /// The columns an activity can share with its match's fan-out state, the update date last.
    static let sharedColumns = [
        "last_timestamp", "sent_content", "sent_at", "sent_stale_date", "held_content", "held_staleness", "updated_at",
    ]

    /// Every column `matchcast_save` writes, and its value for the record `u` (one row of the unnested arrays; a
    /// column the same for every record comes once, as the first value).
    private static let recordValues: [(column: String, value: String)] = [
        ("id", "u.id"),
        ("device_id", "COALESCE(u.device, a_device[1])"),
        ("match_id", "COALESCE(u.match, a_match[1])"),
        ("environment", "COALESCE(u.environment, a_environment[1])"),
        ("phase", "COALESCE(u.phase, a_phase[1])"),
        ("update_token", "NULLIF(COALESCE(u.token, a_token[1]), '')"),
        ("last_timestamp", "COALESCE(u.stamp, a_stamp[1])"),
        ("sent_content", "contents[COALESCE(u.sent, a_sent[1])]"),
        ("sent_at", "NULLIF(COALESCE(u.sent_at, a_sent_at[1]), none)"),
        ("sent_stale_date", "NULLIF(COALESCE(u.stale, a_stale[1]), none)"),
        ("started_at", "NULLIF(COALESCE(u.started_at, a_started_at[1]), none)"),
        ("held_content", "contents[COALESCE(u.held, a_held[1])]"),
        ("held_staleness", "NULLIF(COALESCE(u.staleness, a_staleness[1]), none)"),
        ("end_held", "COALESCE(u.end_held, a_end_held[1])"),
        ("final_content", "contents[COALESCE(u.final, a_final[1])]"),
        ("channel_id", "NULLIF(COALESCE(u.channel, a_channel[1]), '')"),
        // At the column's precision: PostgresNIO sends a date's microseconds truncated, so a whole millisecond that a
        // Double holds a hair low arrives as .xyz999 and would compare unequal to the stored .xyz.
        ("updated_at", "COALESCE(u.updated_at, a_updated_at[1])::timestamptz(3)"),
    ]

    private static func recordValue(_ column: String) -> String {
        recordValues.first { $0.column == column }!.value
    }

    /// `column`'s name in `fan_out_state`'s previous state.
    private static func previous(_ column: String) -> String { "prev_" + column }

    /// Whether the record `u` is written as a member of its match's state `s` (joined, null when the match has
    /// none): open and started, and at the state its id reads, updated no earlier.
    private static let joins: String = {
        let mine = sharedColumns.dropLast().map(recordValue).joined(separator: ", ")
        func at(_ names: [String]) -> String {
            "(\(mine)) IS NOT DISTINCT FROM (\(names.dropLast().map { "s." + $0 }.joined(separator: ", "))) "
                + "AND \(recordValue("updated_at")) >= s.\(names.last!)"
        }
        return """
            COALESCE(s.match_id IS NOT NULL AND \(recordValue("phase")) NOT IN ('waiting', 'ended') AND CASE
                WHEN s.boundary IS NULL OR u.id <= s.boundary THEN \(at(sharedColumns))
                ELSE \(at(sharedColumns.map(previous))) END, false)
            """
    }()

    /// The records as rows: the unnested arrays, each with its match's state (`s`).
    private static let recordRows = """
        unnest(a_id, a_device, a_match, a_environment, a_phase, a_token, a_stamp, a_sent, a_sent_at,
                a_stale, a_started_at, a_held, a_staleness, a_end_held, a_final, a_channel, a_updated_at)
            AS u(id, device, match, environment, phase, token, stamp, sent, sent_at, stale, started_at, held,
                staleness, end_held, final, channel, updated_at)
            LEFT JOIN fan_out_state AS s ON s.match_id = \(recordValue("match_id"))
        """

    /// The members of `s_match` that `condition` selects leave its state, keeping `source` (the current state's
    /// columns or the previous one's, of the locked row `st`) in their own rows, with the later update date.
    private static func detach(keeping source: [String], where condition: String) -> String {
        let keeps = zip(sharedColumns, source).map { column, source in
            column == "updated_at" ? "updated_at = greatest(updated_at, st.\(source))" : "\(column) = st.\(source)"
        }
        return """
            UPDATE activity_row SET shared = false, \(keeps.joined(separator: ", "))
                        WHERE match_id = s_match AND shared AND \(condition);
            """
    }

    /// `column` as the view reads it: the row's own, or its match's state's.
    private static func viewed(_ column: String) -> String {
        let own = "a.\(column)", current = "s.\(column)", before = "s.\(previous(column))"
        let (atCurrent, atPrevious) = column == "updated_at"
            ? ("greatest(\(own), \(current))", "greatest(\(own), \(before))") : (current, before)
        return """
            CASE WHEN s.match_id IS NULL THEN \(own) \
            WHEN s.boundary IS NULL OR a.id <= s.boundary THEN \(atCurrent) ELSE \(atPrevious) END AS \(column)
            """
    }

    /// `fan_out_state`'s columns of the current and the previous state, with their types.
    private static let stateColumns: String = (sharedColumns + sharedColumns.map(previous)).map { (column: String) -> String in
        let type = column.hasSuffix("updated_at") ? "timestamptz(3) NOT NULL"
            : column.hasSuffix("last_timestamp") ? "bigint NOT NULL" : "bigint"
        return column + " " + type
    }.joined(separator: ",\n    ")

    static let v8 = Migration(name: "v8", statements: [
        "ALTER TABLE activity RENAME TO activity_row",
        "ALTER TABLE activity_row ADD COLUMN shared boolean NOT NULL DEFAULT false",
        """
        CREATE TABLE fan_out_state (
            match_id text COLLATE "C" PRIMARY KEY,
            \(stateColumns),
            boundary text COLLATE "C"
        )
        """,
        """
        CREATE VIEW activity AS
        SELECT a.id, a.device_id, a.match_id, a.environment, a.phase, a.update_token,
            \(sharedColumns.map(viewed).joined(separator: ",\n    ")),
            a.started_at, a.end_held, a.final_content, a.channel_id, a.open, a.shared
        FROM activity_row AS a LEFT JOIN fan_out_state AS s ON a.shared AND s.match_id = a.match_id
        """,
        """
        CREATE FUNCTION matchcast_activity_delete() RETURNS trigger
        LANGUAGE plpgsql AS $delete$
        BEGIN
            DELETE FROM activity_row WHERE id = OLD.id;
            RETURN OLD;
        END
        $delete$
        """,
        """
        CREATE TRIGGER activity_delete INSTEAD OF DELETE ON activity
        FOR EACH ROW EXECUTE FUNCTION matchcast_activity_delete()
        """,
        saveFunction(create: "CREATE FUNCTION", fenceAndContents: saveFenceAndContents, variables: "", opened: ""),
        """
        CREATE OR REPLACE FUNCTION matchcast_save(
        \(saveParameters)
        ) RETURNS text
        LANGUAGE sql AS $save$
            SELECT matchcast_save(fence_owner, fence_matches, fence_generations, content_matches, content_texts,
                a_id, a_device, a_match, a_environment, a_phase, a_token, a_stamp, a_sent, a_sent_at, a_stale, a_started_at,
                a_held, a_staleness, a_end_held, a_final, a_channel, a_updated_at, q_match, q_first_activity,
                q_last_activity, p_push_type, p_topic, p_priority, p_expiration, p_payload, e_delivery, e_activity,
                e_event, e_kind, e_value, e_payload,
                NULL::text, NULL::text[], NULL::bigint, NULL::integer, NULL::bigint, NULL::bigint, NULL::integer,
                NULL::bigint, NULL::timestamptz, NULL::text, NULL::text)
        $save$
        """,
    ])

    /// `matchcast_save`'s definition with a fan-out chunk's description (v8's, and later ones that replace it):
    /// `create` is its `CREATE` clause, `fenceAndContents` its first steps, `variables` more declarations after v8's,
    /// and `opened` what runs once a fan-out has opened a new state for its match (after `boundary = ''`).
    static func saveFunction(create: String, fenceAndContents: String, variables: String, opened: String) -> String {
        return """
        \(create) matchcast_save(
        \(saveParameters),
            s_match text, s_moved text[], s_stamp bigint, s_sent integer, s_sent_at bigint, s_stale bigint, s_held integer,
            s_staleness bigint, s_updated_at timestamptz, s_from text, s_through text
        ) RETURNS text
        LANGUAGE plpgsql AS $save$
        DECLARE
        \(saveVariables)
            st fan_out_state%ROWTYPE;\(variables)
        BEGIN
        \(fenceAndContents)
            -- The state's date at the stored precision (see `recordValues`' update date).
            s_updated_at := s_updated_at::timestamptz(3);

            -- A fan-out chunk (`s_match` given): its state becomes the match's current one, unless it already is (a
            -- later chunk of the same fan-out). Members the new state must not move keep theirs in their own rows
            -- first: those a failed fan-out left past its boundary (at the previous state), and those before this
            -- chunk (at the current one: chunks before it, with nothing to share, were not described). Then the
            -- boundary moves past the chunk (never back). The row stays locked: a write outside the fan-out waits.
            IF s_match IS NOT NULL THEN
                SELECT * INTO st FROM fan_out_state WHERE match_id = s_match FOR UPDATE;
                IF NOT FOUND THEN
                    INSERT INTO fan_out_state VALUES (s_match,
                        s_stamp, contents[s_sent], s_sent_at, s_stale, contents[s_held], s_staleness, s_updated_at,
                        s_stamp, contents[s_sent], s_sent_at, s_stale, contents[s_held], s_staleness, s_updated_at, '');
                ELSIF (st.last_timestamp, st.sent_content, st.sent_at, st.sent_stale_date, st.held_content,
                        st.held_staleness, st.updated_at)
                    IS DISTINCT FROM (s_stamp, contents[s_sent], s_sent_at, s_stale, contents[s_held], s_staleness,
                        s_updated_at) THEN
                    IF st.boundary IS NOT NULL THEN
                        \(detach(keeping: sharedColumns.map(previous), where: "id > st.boundary"))
                    END IF;
                    \(detach(keeping: sharedColumns, where: "id < s_from"))
                    UPDATE fan_out_state SET
                        (\(sharedColumns.map(previous).joined(separator: ", "))) = (\(sharedColumns.joined(separator: ", "))),
                        (\(sharedColumns.joined(separator: ", "))) = (s_stamp, contents[s_sent], s_sent_at, s_stale,
                            contents[s_held], s_staleness, s_updated_at),
                        boundary = ''
                    WHERE match_id = s_match;\(opened)
                END IF;
                UPDATE fan_out_state SET boundary = CASE
                    WHEN s_through IS NULL OR boundary IS NULL THEN NULL WHEN boundary < s_through THEN s_through
                    ELSE boundary END
                WHERE match_id = s_match;
            END IF;

            -- The activities written whole, as v7 writes them, each a member of its match's state if it reads the same
            -- there (`shared`). The states are locked first (for share, in match order): a fan-out opening a new one
            -- waits for this write, and this write for it, so membership is decided against the state that stands.
            IF cardinality(a_id) > 0 THEN
                PERFORM 1 FROM fan_out_state WHERE match_id IN (SELECT unnest(a_match)) ORDER BY match_id FOR SHARE;
                BEGIN
                    UPDATE activity_row AS a SET
                        \(recordValues.dropFirst().map { "\($0.column) = \($0.value)" }.joined(separator: ",\n            ")),
                        shared = \(joins)
                    FROM \(recordRows)
                    WHERE a.id = u.id;
                    GET DIAGNOSTICS updated = ROW_COUNT;
                    IF updated < cardinality(a_id) THEN
                        RAISE EXCEPTION 'a new activity' USING ERRCODE = 'MCNEW';
                    END IF;
                EXCEPTION WHEN SQLSTATE 'MCNEW' THEN
                    INSERT INTO activity_row (\(recordValues.map(\.column).joined(separator: ", ")), shared)
                    SELECT \(recordValues.map(\.value).joined(separator: ",\n            ")),
                        \(joins)
                    FROM \(recordRows)
                    ON CONFLICT (id) DO UPDATE SET
                        \((recordValues.dropFirst().map(\.column) + ["shared"]).map { "\($0) = excluded.\($0)" }
                            .joined(separator: ", "));
                END;
            END IF;

            -- The chunk's activities that only moved to its state and were not members join it.
            IF s_match IS NOT NULL AND cardinality(s_moved) > 0 THEN
                UPDATE activity_row SET shared = true WHERE id = ANY(s_moved) AND match_id = s_match AND NOT shared;
            END IF;

        \(saveDeliveries)
            RETURN NULL;
        END
        $save$
        """
    }
}
