internal import GRDB

// Migrations are plain SQL and never change once released: a schema change is a new migration
// appended below (`v2`, ...). They must not use app types, whose shape changes with the code.

extension SQLiteStore {
    /// The schema, in order.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()

        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE device (
                    id TEXT NOT NULL PRIMARY KEY,
                    secretHash TEXT NOT NULL,
                    createdAt DATETIME NOT NULL
                );

                CREATE TABLE pushToStartToken (
                    deviceId TEXT NOT NULL PRIMARY KEY REFERENCES device(id) ON DELETE CASCADE,
                    token TEXT NOT NULL UNIQUE,
                    environment TEXT NOT NULL,
                    updatedAt DATETIME NOT NULL
                );

                CREATE TABLE follow (
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    matchId TEXT NOT NULL,
                    createdAt DATETIME NOT NULL,
                    PRIMARY KEY (deviceId, matchId)
                ) WITHOUT ROWID;
                CREATE INDEX follow_on_matchId ON follow(matchId);

                -- phase and updateToken repeat what the lifecycle JSON holds, for queries and the
                -- rule that one update token belongs to one open activity.
                CREATE TABLE activity (
                    id TEXT NOT NULL PRIMARY KEY,
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    matchId TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    phase TEXT NOT NULL,
                    updateToken TEXT,
                    lifecycle TEXT NOT NULL,
                    updatedAt DATETIME NOT NULL
                );
                CREATE INDEX activity_on_matchId ON activity(matchId);
                CREATE INDEX activity_on_deviceId ON activity(deviceId);
                CREATE INDEX activity_on_updateToken ON activity(updateToken);
                CREATE UNIQUE INDEX activity_open_updateToken ON activity(updateToken)
                    WHERE updateToken IS NOT NULL AND phase <> 'ended';
                CREATE INDEX activity_open ON activity(phase) WHERE phase <> 'ended';

                CREATE TABLE matchState (
                    matchId TEXT NOT NULL PRIMARY KEY,
                    snapshot TEXT NOT NULL,
                    updatedAt DATETIME NOT NULL
                );
                """)
        }

        // The outbox: deliveries saved with the activities that produced them, until every sink has them.
        // One per (activity, event); the implicit rowid orders them (a replaced update is a new row).
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE outbox (
                    activityId TEXT NOT NULL,
                    event TEXT NOT NULL,
                    deliveryId TEXT NOT NULL UNIQUE,
                    delivery BLOB NOT NULL,
                    PRIMARY KEY (activityId, event)
                );

                CREATE TABLE deadLetter (
                    deliveryId TEXT NOT NULL,
                    sink TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    delivery BLOB NOT NULL,
                    recordedAt DATETIME NOT NULL,
                    PRIMARY KEY (deliveryId, sink)
                );
                CREATE INDEX deadLetter_on_recordedAt ON deadLetter(recordedAt);
                """)
        }

        // Broadcast channels (iOS 18): a match's channel and its state machine (JSON), kept until APNs deleted it.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: """
                CREATE TABLE matchChannel (
                    matchId TEXT NOT NULL PRIMARY KEY,
                    channelId TEXT NOT NULL,
                    phase TEXT NOT NULL,
                    state TEXT NOT NULL,
                    updatedAt DATETIME NOT NULL
                );
                """)
        }

        // Compact activities and a shared outbox payload (what a fan-out writes per activity is a few numbers and
        // references, not a JSON document and a copy of the payload):
        // - `contentState`: one row per distinct content-state of a match; activities refer to it by id.
        // - `activity`: the lifecycle in columns (dates in whole Unix seconds, the held staleness in nanoseconds)
        //   instead of JSON. Each v3 row is converted in SQL; no app type is used.
        // - `outboxPayload`: the match, headers and payload of queued deliveries, once per distinct payload of a
        //   save; `outbox` rows name their target and payload. A row queued before v4 keeps its whole delivery in
        //   `delivery` and is read as before.
        migrator.registerMigration("v4") { db in
            try db.execute(sql: """
                CREATE TABLE contentState (
                    id INTEGER PRIMARY KEY,
                    matchId TEXT NOT NULL,
                    content TEXT NOT NULL
                );
                CREATE UNIQUE INDEX contentState_on_match_content ON contentState(matchId, content);

                INSERT OR IGNORE INTO contentState (matchId, content)
                    SELECT matchId, json_extract(lifecycle, '$.sentContent') FROM activity
                        WHERE json_type(lifecycle, '$.sentContent') = 'object'
                    UNION ALL
                    SELECT matchId, json_extract(lifecycle, '$.held') FROM activity
                        WHERE json_type(lifecycle, '$.held') = 'object'
                    UNION ALL
                    SELECT matchId, json_extract(lifecycle, '$.finalContent') FROM activity
                        WHERE json_type(lifecycle, '$.finalContent') = 'object';

                CREATE TABLE activity_v4 (
                    id TEXT NOT NULL PRIMARY KEY,
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    matchId TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    phase TEXT NOT NULL,
                    updateToken TEXT,
                    lastTimestamp INTEGER NOT NULL,
                    sentContent INTEGER,
                    sentAt INTEGER,
                    sentStaleDate INTEGER,
                    startedAt INTEGER,
                    heldContent INTEGER,
                    heldStaleness INTEGER,
                    endHeld INTEGER NOT NULL,
                    finalContent INTEGER,
                    channelId TEXT,
                    updatedAt DATETIME NOT NULL
                );

                INSERT INTO activity_v4
                    SELECT a.id, a.deviceId, a.matchId, a.environment, a.phase, a.updateToken,
                        coalesce(json_extract(a.lifecycle, '$.lastTimestamp'), 0),
                        (SELECT c.id FROM contentState c
                            WHERE c.matchId = a.matchId AND c.content = json_extract(a.lifecycle, '$.sentContent')),
                        CAST(strftime('%s', json_extract(a.lifecycle, '$.sentAt')) AS INTEGER),
                        json_extract(a.lifecycle, '$.sentStaleDate'),
                        CAST(strftime('%s', json_extract(a.lifecycle, '$.startedAt')) AS INTEGER),
                        (SELECT c.id FROM contentState c
                            WHERE c.matchId = a.matchId AND c.content = json_extract(a.lifecycle, '$.held')),
                        CASE WHEN json_type(a.lifecycle, '$.heldStaleness') = 'array' THEN
                            CAST(round((json_extract(a.lifecycle, '$.heldStaleness[0]') * 18446744073709551616.0
                                + json_extract(a.lifecycle, '$.heldStaleness[1]')) / 1000000000.0) AS INTEGER)
                        END,
                        coalesce(json_extract(a.lifecycle, '$.endHeld'), 0),
                        (SELECT c.id FROM contentState c
                            WHERE c.matchId = a.matchId AND c.content = json_extract(a.lifecycle, '$.finalContent')),
                        json_extract(a.lifecycle, '$.channelId'),
                        a.updatedAt
                    FROM activity a;

                DROP TABLE activity;
                ALTER TABLE activity_v4 RENAME TO activity;
                CREATE INDEX activity_on_matchId ON activity(matchId);
                CREATE INDEX activity_on_deviceId ON activity(deviceId);
                CREATE INDEX activity_on_updateToken ON activity(updateToken);
                CREATE UNIQUE INDEX activity_open_updateToken ON activity(updateToken)
                    WHERE updateToken IS NOT NULL AND phase <> 'ended';
                CREATE INDEX activity_open ON activity(phase) WHERE phase <> 'ended';

                CREATE TABLE outboxPayload (
                    id INTEGER PRIMARY KEY,
                    matchId TEXT NOT NULL,
                    pushType TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    priority INTEGER NOT NULL,
                    expiration INTEGER NOT NULL,
                    payload BLOB NOT NULL
                );

                CREATE TABLE outbox_v4 (
                    activityId TEXT NOT NULL,
                    event TEXT NOT NULL,
                    deliveryId TEXT NOT NULL UNIQUE,
                    targetKind TEXT,
                    targetValue TEXT,
                    payloadId INTEGER,
                    delivery BLOB,
                    PRIMARY KEY (activityId, event)
                );
                INSERT INTO outbox_v4 (rowid, activityId, event, deliveryId, delivery)
                    SELECT rowid, activityId, event, deliveryId, delivery FROM outbox;
                DROP TABLE outbox;
                ALTER TABLE outbox_v4 RENAME TO outbox;
                """)
        }

        // - The activity table clustered on its id (`WITHOUT ROWID`): a fan-out walks a match's activities in id
        //   order, so one chunk's rows share a few pages instead of one page each (and each page goes to the WAL once
        //   per commit). Its indexes are kept as they were.
        // - `outboxBatch`: the outbox one row per run of deliveries sharing a payload (a fan-out chunk is one row),
        //   their ids, activities, events and targets packed in `entries` (`OutboxBatchEntries`), with the range of
        //   their activity ids so a newer save finds what it replaces without reading every batch. `outbox` keeps
        //   what earlier versions queued, sent first.
        migrator.registerMigration("v5") { db in
            try db.execute(sql: """
                CREATE TABLE activity_v5 (
                    id TEXT NOT NULL PRIMARY KEY,
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    matchId TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    phase TEXT NOT NULL,
                    updateToken TEXT,
                    lastTimestamp INTEGER NOT NULL,
                    sentContent INTEGER,
                    sentAt INTEGER,
                    sentStaleDate INTEGER,
                    startedAt INTEGER,
                    heldContent INTEGER,
                    heldStaleness INTEGER,
                    endHeld INTEGER NOT NULL,
                    finalContent INTEGER,
                    channelId TEXT,
                    updatedAt DATETIME NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO activity_v5
                    SELECT id, deviceId, matchId, environment, phase, updateToken, lastTimestamp, sentContent, sentAt,
                        sentStaleDate, startedAt, heldContent, heldStaleness, endHeld, finalContent, channelId, updatedAt
                    FROM activity;
                DROP TABLE activity;
                ALTER TABLE activity_v5 RENAME TO activity;
                CREATE INDEX activity_on_matchId ON activity(matchId);
                CREATE INDEX activity_on_deviceId ON activity(deviceId);
                CREATE INDEX activity_on_updateToken ON activity(updateToken);
                CREATE UNIQUE INDEX activity_open_updateToken ON activity(updateToken)
                    WHERE updateToken IS NOT NULL AND phase <> 'ended';
                CREATE INDEX activity_open ON activity(phase) WHERE phase <> 'ended';

                CREATE TABLE outboxBatch (
                    id INTEGER PRIMARY KEY,
                    payloadId INTEGER NOT NULL,
                    count INTEGER NOT NULL,
                    firstActivityId TEXT NOT NULL,
                    lastActivityId TEXT NOT NULL,
                    entries BLOB NOT NULL
                );
                """)
        }

        // - What a fan-out moves the same way for every activity of a match (what it sent, when, its stale date, what
        //   it holds back, its update date) kept once per match in `fanOutState`, not once per activity: an activity
        //   whose `shared` is 1 takes those from its match's row, from its current state if its id is at most
        //   `boundary` (or `boundary` is null), from its previous one otherwise. `activityView` resolves that; every
        //   read of activities goes through it. Existing rows keep their own state (`shared` 0).
        //   See `SQLiteStore+FanOutState.swift`.
        migrator.registerMigration("v6") { db in
            try db.execute(sql: """
                ALTER TABLE activity ADD COLUMN shared INTEGER NOT NULL DEFAULT 0;

                CREATE TABLE fanOutState (
                    matchId TEXT NOT NULL PRIMARY KEY,
                    lastTimestamp INTEGER NOT NULL,
                    sentContent INTEGER,
                    sentAt INTEGER,
                    sentStaleDate INTEGER,
                    heldContent INTEGER,
                    heldStaleness INTEGER,
                    updatedAt DATETIME NOT NULL,
                    prevLastTimestamp INTEGER NOT NULL,
                    prevSentContent INTEGER,
                    prevSentAt INTEGER,
                    prevSentStaleDate INTEGER,
                    prevHeldContent INTEGER,
                    prevHeldStaleness INTEGER,
                    prevUpdatedAt DATETIME NOT NULL,
                    boundary TEXT
                ) WITHOUT ROWID;

                CREATE VIEW activityView AS
                SELECT a.id AS id, a.deviceId AS deviceId, a.matchId AS matchId, a.environment AS environment,
                    a.phase AS phase, a.updateToken AS updateToken,
                    CASE WHEN s.matchId IS NULL THEN a.lastTimestamp
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.lastTimestamp
                        ELSE s.prevLastTimestamp END AS lastTimestamp,
                    CASE WHEN s.matchId IS NULL THEN a.sentContent
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.sentContent
                        ELSE s.prevSentContent END AS sentContent,
                    CASE WHEN s.matchId IS NULL THEN a.sentAt
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.sentAt
                        ELSE s.prevSentAt END AS sentAt,
                    CASE WHEN s.matchId IS NULL THEN a.sentStaleDate
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.sentStaleDate
                        ELSE s.prevSentStaleDate END AS sentStaleDate,
                    a.startedAt AS startedAt,
                    CASE WHEN s.matchId IS NULL THEN a.heldContent
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.heldContent
                        ELSE s.prevHeldContent END AS heldContent,
                    CASE WHEN s.matchId IS NULL THEN a.heldStaleness
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.heldStaleness
                        ELSE s.prevHeldStaleness END AS heldStaleness,
                    a.endHeld AS endHeld, a.finalContent AS finalContent, a.channelId AS channelId,
                    CASE WHEN s.matchId IS NULL THEN a.updatedAt
                        WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.updatedAt
                        ELSE s.prevUpdatedAt END AS updatedAt,
                    a.shared AS shared
                FROM activity a LEFT JOIN fanOutState s ON a.shared = 1 AND s.matchId = a.matchId;
                """)
        }

        // - Update tokens are found through `tokenKey` (`SQLiteStore.tokenKey`: 64 bits of the token's SHA-256), one
        //   narrow index, not through two indexes on the whole token: a token is up to 200 characters and random, so
        //   each registration dirtied a page of each. The rule the unique index kept (no two open activities on one
        //   token) is kept by triggers that look the token up by its key before a row takes it.
        // - An activity sharing its match's sent state keeps its own update date when that is later (an update token
        //   written after a fan-out), so such a write need not take the activity out of the shared state.
        migrator.registerMigration("v7") { db in
            try db.execute(sql: """
                ALTER TABLE activity ADD COLUMN tokenKey INTEGER;
                DROP INDEX activity_on_updateToken;
                DROP INDEX activity_open_updateToken;
                """)
            // Keys of the tokens stored.
            try SQLiteTextKey.execute(
                "UPDATE activity SET tokenKey = matchcast_text_key(updateToken) WHERE updateToken IS NOT NULL", db)
            try db.execute(sql: """
                CREATE INDEX activity_on_tokenKey ON activity(tokenKey);
                CREATE TRIGGER activity_open_token_insert BEFORE INSERT ON activity
                WHEN \(Self.tokenTaken)
                BEGIN SELECT RAISE(ABORT, 'update token held by another open activity, or stored without its key'); END;
                CREATE TRIGGER activity_open_token_update BEFORE UPDATE OF updateToken, tokenKey, phase ON activity
                WHEN \(Self.tokenTaken)
                BEGIN SELECT RAISE(ABORT, 'update token held by another open activity, or stored without its key'); END;

                DROP VIEW activityView;
                \(Self.activityView)
                """)
        }

        // v8: a kick-off's starts differ only in their activity ids, so a chunk of them is queued as one payload, the
        // start with a stand-in for its activity id (`StartPayloadTemplate`), and one batch of entries, each start's
        // payload cut again on reading with the entry's activity id. `activityIdAt` is where the stand-in is; null for
        // every other payload (kept whole, as before).
        migrator.registerMigration("v8") { db in
            try db.execute(sql: "ALTER TABLE outboxPayload ADD COLUMN activityIdAt INTEGER")
        }

        // v9: the refusals of each device's tokens (`TokenRefusal`), for its diagnostics; gone with the device.
        migrator.registerMigration("v9") { db in
            try db.execute(sql: """
                CREATE TABLE tokenRefusal (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    kind TEXT NOT NULL,
                    token TEXT NOT NULL,
                    activityId TEXT,
                    reason TEXT NOT NULL,
                    at DATETIME NOT NULL
                )
                """)
            try db.execute(sql: "CREATE INDEX tokenRefusal_on_deviceId ON tokenRefusal(deviceId, at)")
        }

        // v10: each match's priority-10 pushes of the last hour (`HighPriorityLedger`), Unix seconds comma-separated.
        migrator.registerMigration("v10") { db in
            try db.execute(sql: "ALTER TABLE matchState ADD COLUMN highPrioritySends TEXT")
        }

        // v11: when each update token was first reported (`UpdateTokenSighting`), for its device's diagnostics; gone
        // with the device.
        migrator.registerMigration("v11") { db in
            try db.execute(sql: """
                CREATE TABLE updateTokenSighting (
                    deviceId TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    firstSeenAt DATETIME NOT NULL,
                    PRIMARY KEY (deviceId, token)
                ) WITHOUT ROWID
                """)
            try db.execute(sql: "CREATE INDEX updateTokenSighting_on_firstSeenAt ON updateTokenSighting(firstSeenAt)")
        }

        // v12: the open, started activities that do not share their match's sent state, indexed by match and id
        // (`activity_unshared`). A fan-out chunk's moved activities join the shared state (`FanOutStateWrite.close`);
        // after a match's first fan-out they are members already, and this index finds the few that are not without
        // looking up each moved activity by its id.
        migrator.registerMigration("v12") { db in
            try db.execute(sql: """
                CREATE INDEX activity_unshared ON activity(matchId, id)
                WHERE shared = 0 AND phase IN ('starting', 'active')
                """)
        }

        // v13: a content is found by its key (`SQLiteTextKey`: eight bytes) and then its text, no longer by a unique
        // index on the text itself, which held every content's text a second time, a few entries to a page (what that
        // cost: docs/performance-history.md). The store has one writer, which looks a content up before it inserts one: no
        // unique index is needed to keep a match's content once.
        migrator.registerMigration("v13") { db in
            try db.execute(sql: "ALTER TABLE contentState ADD COLUMN contentKey INTEGER NOT NULL DEFAULT 0")
            try SQLiteTextKey.execute("UPDATE contentState SET contentKey = matchcast_text_key(content)", db)
            try db.execute(sql: """
                DROP INDEX contentState_on_match_content;
                CREATE INDEX contentState_on_match_key ON contentState(matchId, contentKey);
                """)
        }

        // Later migrations go here (`v14`, ...).

        return migrator
    }

    /// A trigger's condition: the row being written has a token without its key (or a key without a token), or is
    /// open and holds a token another open activity holds.
    private static let tokenTaken = """
        (NEW.updateToken IS NULL) <> (NEW.tokenKey IS NULL) OR NEW.updateToken IS NOT NULL AND NEW.phase <> 'ended' AND EXISTS (
            SELECT 1 FROM activity
            WHERE \(SQLiteStore.holdsToken(token: "NEW.updateToken", key: "NEW.tokenKey")) AND phase <> 'ended'
                AND id <> NEW.id)
        """

    /// Every activity as it reads (v7): a member of its match's shared sent state (`shared` 1) takes that state, current
    /// if its id is at most the boundary (or the boundary is null), previous otherwise; its update date is the later
    /// of the state's and its own.
    private static let activityView = """
        CREATE VIEW activityView AS
        SELECT a.id AS id, a.deviceId AS deviceId, a.matchId AS matchId, a.environment AS environment,
            a.phase AS phase, a.updateToken AS updateToken,
            \(shared("lastTimestamp")) AS lastTimestamp,
            \(shared("sentContent")) AS sentContent,
            \(shared("sentAt")) AS sentAt,
            \(shared("sentStaleDate")) AS sentStaleDate,
            a.startedAt AS startedAt,
            \(shared("heldContent")) AS heldContent,
            \(shared("heldStaleness")) AS heldStaleness,
            a.endHeld AS endHeld, a.finalContent AS finalContent, a.channelId AS channelId,
            CASE WHEN s.matchId IS NULL THEN a.updatedAt
                WHEN s.boundary IS NULL OR a.id <= s.boundary THEN max(a.updatedAt, s.updatedAt)
                ELSE max(a.updatedAt, s.prevUpdatedAt) END AS updatedAt,
            a.shared AS shared, a.tokenKey AS tokenKey
        FROM activity a LEFT JOIN fanOutState s ON a.shared = 1 AND s.matchId = a.matchId;
        """

    /// `column` as the view reads it: the row's own, or its match's shared state's.
    private static func shared(_ column: String) -> String {
        let previous = "prev" + column.prefix(1).uppercased() + column.dropFirst()
        return """
            CASE WHEN s.matchId IS NULL THEN a.\(column) \
            WHEN s.boundary IS NULL OR a.id <= s.boundary THEN s.\(column) ELSE s.\(previous) END
            """
    }
}
