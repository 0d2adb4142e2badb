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

        // Later migrations go here (`v4`, ...).

        return migrator
    }
}
