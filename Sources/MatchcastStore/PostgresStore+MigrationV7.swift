import Foundation

// Schema v7: a fan-out chunk saved in one round trip.
//
// - `outbox_chunk` replaces v6's `outbox_batch`: one row per run of a save's consecutive deliveries of one match (a
//   fan-out chunk is one row, its 1,024 starts included), the entries as parallel arrays the server can read
//   (`delivery_ids`, `activity_ids`, `events`, `target_kinds`, `target_values`, and `payload_refs`, each entry's
//   position in the row's own payload arrays: one payload for an update, one per activity for a kick-off). Arrays are
//   stored out of line uncompressed (written once, read once). v6's batches are converted in place, in their order;
//   `outbox` keeps what v5 and earlier queued, sent first; `outbox_payload` keeps only the payloads those rows use.
// - `matchcast_save(...)`: a whole chunk in one statement (the lease fence, the contents, the activities, what the
//   deliveries replace, the chunk), so one round trip and one transaction. Activities are updated in place and
//   inserted only where missing; a column the same for every record of the chunk is sent once.
// - `matchcast_unqueue(ids)`: the relay's removal in one statement, from the head of the queue.
// - `matchcast_outbox_take(chunks, ordinals)`: takes entries out of chunks (both of the above use it).
// - `activity.open` (stored, from `phase`) is what the partial indexes test instead of `phase`, so a phase change
//   between open phases (a kick-off's waiting → starting) is a HOT update too; and one unique index on
//   (`update_token`, open or NULL) replaces the two on `update_token` (the lookup and the one-open-holder rule), one
//   index less to write when a token changes.

extension PostgresStore {
    static let v7 = Migration(name: "v7", statements: [
            "ALTER TABLE activity ADD COLUMN open boolean GENERATED ALWAYS AS (phase <> 'ended') STORED",
            "DROP INDEX activity_open",
            "DROP INDEX activity_on_update_token",
            "DROP INDEX activity_open_update_token",
            "CREATE INDEX activity_open ON activity (id) WHERE open",
            "CREATE UNIQUE INDEX activity_update_token ON activity (update_token, (CASE WHEN open THEN true END))",
            """
            CREATE TABLE outbox_chunk (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                match_id text COLLATE "C" NOT NULL,
                count integer NOT NULL,
                first_activity_id text COLLATE "C" NOT NULL,
                last_activity_id text COLLATE "C" NOT NULL,
                push_types text[] NOT NULL,
                topics text[] NOT NULL,
                priorities integer[] NOT NULL,
                expirations bigint[] NOT NULL,
                payloads bytea[] NOT NULL,
                delivery_ids text[] NOT NULL,
                activity_ids text[] NOT NULL,
                events text[] NOT NULL,
                target_kinds text[] NOT NULL,
                target_values text[] NOT NULL,
                payload_refs integer[] NOT NULL
            )
            """,
            """
            ALTER TABLE outbox_chunk
                ALTER COLUMN payloads SET STORAGE EXTERNAL,
                ALTER COLUMN delivery_ids SET STORAGE EXTERNAL,
                ALTER COLUMN activity_ids SET STORAGE EXTERNAL,
                ALTER COLUMN events SET STORAGE EXTERNAL,
                ALTER COLUMN target_kinds SET STORAGE EXTERNAL,
                ALTER COLUMN target_values SET STORAGE EXTERNAL,
                ALTER COLUMN payload_refs SET STORAGE EXTERNAL
            """,
            """
            CREATE INDEX outbox_chunk_on_match_id ON outbox_chunk (match_id, id)
            """,
            """
            DO $convert$
            DECLARE
                batch record;
                position integer;
                fields text[];
                size integer;
                ids text[]; activities text[]; events text[]; kinds text[]; targets text[];
            BEGIN
                FOR batch IN
                    SELECT b.id, b.match_id, b.entries, p.push_type, p.topic, p.priority, p.expiration, p.payload
                    FROM outbox_batch b JOIN outbox_payload p ON p.id = b.payload_id ORDER BY b.id
                LOOP
                    ids := '{}'; activities := '{}'; events := '{}'; kinds := '{}'; targets := '{}';
                    position := 0;
                    WHILE position < length(batch.entries) LOOP
                        fields := '{}';
                        FOR field IN 1..5 LOOP
                            IF position + 2 > length(batch.entries) THEN
                                RAISE EXCEPTION 'outbox batch %: its deliveries cannot be read', batch.id USING ERRCODE = 'XX001';
                            END IF;
                            size := get_byte(batch.entries, position) * 256 + get_byte(batch.entries, position + 1);
                            IF position + 2 + size > length(batch.entries) THEN
                                RAISE EXCEPTION 'outbox batch %: its deliveries cannot be read', batch.id USING ERRCODE = 'XX001';
                            END IF;
                            fields := fields || convert_from(substring(batch.entries FROM position + 3 FOR size), 'UTF8');
                            position := position + 2 + size;
                        END LOOP;
                        ids := ids || fields[1]; activities := activities || fields[2]; events := events || fields[3];
                        kinds := kinds || fields[4]; targets := targets || fields[5];
                    END LOOP;
                    IF cardinality(ids) > 0 THEN
                        INSERT INTO outbox_chunk (match_id, count, first_activity_id, last_activity_id, push_types, topics, priorities,
                            expirations, payloads, delivery_ids, activity_ids, events, target_kinds, target_values, payload_refs)
                        SELECT batch.match_id, cardinality(ids), min(a COLLATE "C"), max(a COLLATE "C"), ARRAY[batch.push_type],
                            ARRAY[batch.topic], ARRAY[batch.priority], ARRAY[batch.expiration], ARRAY[batch.payload], ids, activities,
                            events, kinds, targets, array_fill(1, ARRAY[cardinality(ids)])
                        FROM unnest(activities) AS a;
                    END IF;
                END LOOP;
            END
            $convert$
            """,
            """
            DROP TABLE outbox_batch
            """,
            """
            DELETE FROM outbox_payload p WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload_id = p.id)
            """,
            """
            CREATE FUNCTION matchcast_outbox_take(chunk_ids bigint[], ordinals bigint[]) RETURNS void
            LANGUAGE plpgsql AS $take$
            BEGIN
                -- Chunks every entry of which is taken go; the others keep the entries not taken, in order (their payloads stay).
                WITH taken AS (SELECT t.id, count(*) AS n FROM unnest(chunk_ids) AS t(id) GROUP BY t.id)
                DELETE FROM outbox_chunk AS c USING taken WHERE c.id = taken.id AND c.count <= taken.n;
                UPDATE outbox_chunk AS c SET
                    (count, first_activity_id, last_activity_id, delivery_ids, activity_ids, events, target_kinds, target_values,
                        payload_refs) = (
                        SELECT count(*), min(e.a COLLATE "C"), max(e.a COLLATE "C"), array_agg(e.d ORDER BY e.n),
                            array_agg(e.a ORDER BY e.n), array_agg(e.ev ORDER BY e.n), array_agg(e.k ORDER BY e.n),
                            array_agg(e.v ORDER BY e.n), array_agg(e.p ORDER BY e.n)
                        FROM unnest(c.delivery_ids, c.activity_ids, c.events, c.target_kinds, c.target_values, c.payload_refs)
                            WITH ORDINALITY AS e(d, a, ev, k, v, p, n)
                        WHERE e.n NOT IN (SELECT t.n FROM unnest(chunk_ids, ordinals) AS t(id, n) WHERE t.id = c.id))
                WHERE c.id IN (SELECT DISTINCT t.id FROM unnest(chunk_ids) AS t(id));
            END
            $take$
            """,
            unqueueFunction(create: "CREATE FUNCTION", window: "4096"),
            """
            CREATE FUNCTION matchcast_save(
            \(saveParameters)
            ) RETURNS text
            LANGUAGE plpgsql AS $save$
            DECLARE
            \(saveVariables)
            BEGIN
            \(saveFenceAndContents)

                -- The activities: a column the same for every record comes as one value (the first row's; unnest pads the
                -- others with NULL). When every record exists (a fan-out's case) they are updated in place: HOT, no index
                -- is touched unless the phase or the token changes. Otherwise (a new activity) the update is undone and
                -- every record is inserted or updated in the order given, so that a token is checked against the
                -- records before it, as the row-by-row path checks it.
                IF cardinality(a_id) > 0 THEN
                    BEGIN
                        UPDATE activity AS a SET
                            device_id = COALESCE(u.device, a_device[1]), match_id = COALESCE(u.match, a_match[1]),
                            environment = COALESCE(u.environment, a_environment[1]),
                            phase = COALESCE(u.phase, a_phase[1]), update_token = NULLIF(COALESCE(u.token, a_token[1]), ''),
                            last_timestamp = COALESCE(u.stamp, a_stamp[1]),
                            sent_content = contents[COALESCE(u.sent, a_sent[1])],
                            sent_at = NULLIF(COALESCE(u.sent_at, a_sent_at[1]), none),
                            sent_stale_date = NULLIF(COALESCE(u.stale, a_stale[1]), none),
                            started_at = NULLIF(COALESCE(u.started_at, a_started_at[1]), none),
                            held_content = contents[COALESCE(u.held, a_held[1])],
                            held_staleness = NULLIF(COALESCE(u.staleness, a_staleness[1]), none),
                            end_held = COALESCE(u.end_held, a_end_held[1]),
                            final_content = contents[COALESCE(u.final, a_final[1])],
                            channel_id = NULLIF(COALESCE(u.channel, a_channel[1]), ''),
                            updated_at = COALESCE(u.updated_at, a_updated_at[1])
                        FROM unnest(a_id, a_device, a_match, a_environment, a_phase, a_token, a_stamp, a_sent, a_sent_at,
                                a_stale, a_started_at, a_held, a_staleness, a_end_held, a_final, a_channel, a_updated_at)
                            AS u(id, device, match, environment, phase, token, stamp, sent, sent_at, stale, started_at, held,
                                staleness, end_held, final, channel, updated_at)
                        WHERE a.id = u.id;
                        GET DIAGNOSTICS updated = ROW_COUNT;
                        IF updated < cardinality(a_id) THEN
                            RAISE EXCEPTION 'a new activity' USING ERRCODE = 'MCNEW';
                        END IF;
                    EXCEPTION WHEN SQLSTATE 'MCNEW' THEN
                        INSERT INTO activity (id, device_id, match_id, environment, phase, update_token, last_timestamp,
                            sent_content, sent_at, sent_stale_date, started_at, held_content, held_staleness, end_held,
                            final_content, channel_id, updated_at)
                        SELECT u.id, COALESCE(u.device, a_device[1]), COALESCE(u.match, a_match[1]),
                            COALESCE(u.environment, a_environment[1]), COALESCE(u.phase, a_phase[1]),
                            NULLIF(COALESCE(u.token, a_token[1]), ''), COALESCE(u.stamp, a_stamp[1]),
                            contents[COALESCE(u.sent, a_sent[1])], NULLIF(COALESCE(u.sent_at, a_sent_at[1]), none),
                            NULLIF(COALESCE(u.stale, a_stale[1]), none), NULLIF(COALESCE(u.started_at, a_started_at[1]), none),
                            contents[COALESCE(u.held, a_held[1])], NULLIF(COALESCE(u.staleness, a_staleness[1]), none),
                            COALESCE(u.end_held, a_end_held[1]), contents[COALESCE(u.final, a_final[1])],
                            NULLIF(COALESCE(u.channel, a_channel[1]), ''), COALESCE(u.updated_at, a_updated_at[1])
                        FROM unnest(a_id, a_device, a_match, a_environment, a_phase, a_token, a_stamp, a_sent, a_sent_at,
                                a_stale, a_started_at, a_held, a_staleness, a_end_held, a_final, a_channel, a_updated_at)
                            AS u(id, device, match, environment, phase, token, stamp, sent, sent_at, stale, started_at, held,
                                staleness, end_held, final, channel, updated_at)
                        ON CONFLICT (id) DO UPDATE SET
                            device_id = excluded.device_id, match_id = excluded.match_id, environment = excluded.environment,
                            phase = excluded.phase, update_token = excluded.update_token, last_timestamp = excluded.last_timestamp,
                            sent_content = excluded.sent_content, sent_at = excluded.sent_at,
                            sent_stale_date = excluded.sent_stale_date, started_at = excluded.started_at,
                            held_content = excluded.held_content, held_staleness = excluded.held_staleness,
                            end_held = excluded.end_held, final_content = excluded.final_content,
                            channel_id = excluded.channel_id, updated_at = excluded.updated_at;
                    END;
                END IF;

            \(saveDeliveries)
                RETURN NULL;
            END
            $save$
            """,
    ])

    /// `matchcast_save`'s parameters (v7), which v8's keeps first.
    static let saveParameters = """
            fence_owner text, fence_matches text[], fence_generations bigint[],
            content_matches text[], content_texts text[],
            a_id text[], a_device text[], a_match text[], a_environment text[], a_phase text[], a_token text[], a_stamp bigint[],
            a_sent integer[], a_sent_at bigint[], a_stale bigint[], a_started_at bigint[], a_held integer[], a_staleness bigint[],
            a_end_held boolean[], a_final integer[], a_channel text[], a_updated_at timestamptz[],
            q_match text, q_first_activity text, q_last_activity text,
            p_push_type text[], p_topic text[], p_priority integer[], p_expiration bigint[], p_payload bytea[],
            e_delivery text[], e_activity text[], e_event text[], e_kind text[], e_value text[], e_payload integer[]
        """

    /// `matchcast_save`'s variables (v7, and v8's).
    static let saveVariables = """
            none constant bigint := -9223372036854775808;
            lost text;
            contents bigint[] := '{}';
            updated integer;
            hit_chunks bigint[];
            hit_ordinals bigint[];
        """

    /// `matchcast_save`'s first steps (v7, and v8's): the lease fence, then the contents.
    static let saveFenceAndContents = saveFence + "\n\n" + saveContents

    /// `matchcast_save`'s lease fence (v7 and later).
    static let saveFence = """
            -- The fence: the leases' rows taken for share (a takeover waits for this transaction, and it for a takeover);
            -- nothing is written unless each is still the owner's at its generation. Returns the first match that is not.
            IF fence_owner IS NOT NULL THEN
                PERFORM 1 FROM match_lease WHERE match_id = ANY(fence_matches) ORDER BY match_id FOR SHARE;
                SELECT f.m INTO lost FROM unnest(fence_matches, fence_generations) AS f(m, g)
                LEFT JOIN match_lease AS l ON l.match_id = f.m
                WHERE l.match_id IS NULL OR l.owner <> fence_owner OR l.generation <> f.g
                ORDER BY f.m COLLATE "C" LIMIT 1;
                IF lost IS NOT NULL THEN RETURN lost; END IF;
            END IF;
        """

    /// `matchcast_save`'s contents (v7 and later): each distinct one upserted, `contents` set to their ids.
    static let saveContents = """
            -- Each distinct content once per match; `contents` holds their ids, and an activity refers to one by position
            -- (0: none).
            IF cardinality(content_texts) > 0 THEN
                INSERT INTO content_state (match_id, content) SELECT * FROM unnest(content_matches, content_texts)
                ON CONFLICT (match_id, md5(content)) DO NOTHING;
                contents := ARRAY(
                    SELECT c.id FROM unnest(content_matches, content_texts) WITH ORDINALITY AS u(m, t, n)
                    JOIN content_state AS c ON c.match_id = u.m AND md5(c.content) = md5(u.t) AND c.content = u.t
                    ORDER BY u.n);
                IF cardinality(contents) <> cardinality(content_texts) THEN
                    RAISE EXCEPTION 'a content-state row vanished while it was saved';
                END IF;
            END IF;
        """

    /// `matchcast_unqueue` (v7), with `window`: how many chunks from the head one page may look at (v16 changes it).
    static func unqueueFunction(create: String, window: String) -> String {
        """
        \(create) matchcast_unqueue(ids text[]) RETURNS void
        LANGUAGE plpgsql AS $unqueue$
        DECLARE
            wanted integer := cardinality(ids);
            found integer := 0;
            removed integer;
            after bigint := -1;
            page bigint[];
            hit_chunks bigint[];
            hit_ordinals bigint[];
        BEGIN
            IF wanted = 0 THEN RETURN; END IF;
            -- Queued before v6, one row each; the payloads they alone used go with them.
            IF EXISTS (SELECT 1 FROM outbox) THEN
                DELETE FROM outbox WHERE delivery_id = ANY(ids);
                GET DIAGNOSTICS removed = ROW_COUNT;
                found := removed;
                IF removed > 0 THEN
                    DELETE FROM outbox_payload AS p WHERE NOT EXISTS (SELECT 1 FROM outbox AS o WHERE o.payload_id = p.id);
                END IF;
            END IF;
            -- The chunks, from the head of the queue (what the relay just sent), locked in id order, a page at a time: the
            -- chunks that hold as many entries as are still wanted, until every id is found or the queue ends.
            LOOP
                EXIT WHEN found >= wanted;
                page := ARRAY(
                    SELECT c.id FROM outbox_chunk AS c
                    WHERE c.id > after AND c.id <= COALESCE((
                        SELECT max(h.id) FROM (
                            SELECT w.id, sum(w.count) OVER (ORDER BY w.id) - w.count AS before
                            FROM (SELECT id, count FROM outbox_chunk WHERE id > after ORDER BY id LIMIT \(window)) AS w
                        ) AS h WHERE h.before < wanted - found), after)
                    ORDER BY c.id FOR UPDATE);
                EXIT WHEN cardinality(page) = 0;
                SELECT array_agg(c.id), array_agg(e.n), count(*)::integer INTO hit_chunks, hit_ordinals, removed
                FROM outbox_chunk AS c, unnest(c.delivery_ids) WITH ORDINALITY AS e(d, n)
                WHERE c.id = ANY(page) AND e.d IN (SELECT unnest(ids));
                IF removed > 0 THEN
                    PERFORM matchcast_outbox_take(hit_chunks, hit_ordinals);
                    found := found + removed;
                END IF;
                after := page[cardinality(page)];
            END LOOP;
        END
        $unqueue$
        """
    }

    /// `matchcast_save`'s last step (v7, and v8's): the deliveries, as one `outbox_chunk` row.
    static let saveDeliveries = """
            -- The deliveries: one run of one match, queued as one chunk. What they replace (the same activity and event, or
            -- the same delivery id) goes first: rows queued before v6, then entries of the match's chunks whose activity
            -- range meets the run's, locked in id order as `matchcast_unqueue` locks them.
            IF cardinality(e_delivery) > 0 THEN
                IF EXISTS (SELECT 1 FROM outbox) THEN
                    DELETE FROM outbox
                    WHERE (activity_id, event) IN (SELECT * FROM unnest(e_activity, e_event)) OR delivery_id = ANY(e_delivery);
                END IF;
                SELECT array_agg(c.id), array_agg(e.n) INTO hit_chunks, hit_ordinals
                FROM (
                    SELECT id, delivery_ids, activity_ids, events FROM outbox_chunk
                    WHERE match_id = q_match AND last_activity_id >= q_first_activity AND first_activity_id <= q_last_activity
                    ORDER BY id FOR UPDATE
                ) AS c, unnest(c.delivery_ids, c.activity_ids, c.events) WITH ORDINALITY AS e(d, a, ev, n)
                WHERE (e.a, e.ev) IN (SELECT * FROM unnest(e_activity, e_event)) OR e.d IN (SELECT unnest(e_delivery));
                IF hit_chunks IS NOT NULL THEN
                    PERFORM matchcast_outbox_take(hit_chunks, hit_ordinals);
                END IF;
                INSERT INTO outbox_chunk (match_id, count, first_activity_id, last_activity_id, push_types, topics, priorities,
                    expirations, payloads, delivery_ids, activity_ids, events, target_kinds, target_values, payload_refs)
                VALUES (q_match, cardinality(e_delivery), q_first_activity, q_last_activity, p_push_type, p_topic, p_priority,
                    p_expiration, p_payload, e_delivery, e_activity, e_event, e_kind, e_value, e_payload);
            END IF;
        """
}
