import Foundation
import Logging
import PostgresNIO

// Migrations are plain SQL and never change once released: a schema change is a new migration
// appended below (`v2`, ...). They must not use app types, whose shape changes with the code.
// Each runs in its own transaction and is recorded in `schema_migrations` in the same one, so a
// migration is applied completely, once, or not at all. Replicas that start together wait on an
// advisory lock: one migrates, the others find the work done.
//
// Rolling upgrades: replicas of two builds share one database while a rollout runs, so a migration says which
// builds can still use the database once it is applied (`readers`), and the row records it for builds that have
// never heard of the migration. An expand migration (a new table, a column with a default or nullable, an index)
// leaves every build that could use the database before able to use it (`.any`); one that removes or reshapes
// what a build reads needs builds that know it (`.knowing(self)`, the default, and what every row written before
// the column existed means), or builds that know an earlier migration, the first of the builds that stopped
// reading what it removes (`.knowing("vN")`: expand, then contract one release later). A build refuses, before
// touching anything, a database with a migration whose readers it is not among; it runs beside one with
// migrations it does not know that need nothing it lacks. docs/development.md has the rules for writing one.
//
// Text keys are `COLLATE "C"`: lists sort by code point whatever the database's locale, as the
// other stores sort them. Dates are `timestamptz(3)`: whole milliseconds, the protocol's precision.

extension PostgresStore {
    /// A named step of the schema: statements run in order in one transaction.
    struct Migration: Sendable {
        var name: String
        var statements: [String]
        /// Which builds can use the database once this migration is applied.
        var readers: Readers = .knowingThis

        /// Which builds can use the database once a migration is applied: recorded in `schema_migrations.readers`
        /// as NULL (`knowingThis`), '' (`any`) or a migration's name (`knowing`).
        enum Readers: Sendable, Hashable {
            /// Only builds that know this migration (it removes or reshapes what earlier builds read).
            case knowingThis
            /// Every build that could use the database before (it only adds).
            case any
            /// Builds that know the named earlier migration (they stopped reading what this one removes).
            case knowing(String)

            var column: String? {
                switch self {
                case .knowingThis: nil
                case .any: ""
                case .knowing(let name): name
                }
            }

            /// The migration a build must know to use a database where `name` was applied with `column`; nil when none.
            static func required(name: String, column: String?) -> String? {
                guard let column else { return name }
                return column.isEmpty ? nil : column
            }
        }
    }

    /// The schema, in order.
    static let migrations: [Migration] = [
        Migration(name: "v1", statements: [
            """
            CREATE TABLE device (
                id text COLLATE "C" PRIMARY KEY,
                secret_hash text NOT NULL,
                created_at timestamptz(3) NOT NULL
            )
            """,
            """
            CREATE TABLE push_to_start_token (
                device_id text COLLATE "C" PRIMARY KEY REFERENCES device(id) ON DELETE CASCADE,
                token text NOT NULL UNIQUE,
                environment text NOT NULL,
                updated_at timestamptz(3) NOT NULL
            )
            """,
            """
            CREATE TABLE follow (
                device_id text COLLATE "C" NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                match_id text COLLATE "C" NOT NULL,
                created_at timestamptz(3) NOT NULL,
                PRIMARY KEY (device_id, match_id)
            )
            """,
            "CREATE INDEX follow_on_match_id ON follow (match_id, device_id)",
            // phase and update_token repeat what the lifecycle JSON holds, for queries and the
            // rule that one update token belongs to one open activity.
            """
            CREATE TABLE activity (
                id text COLLATE "C" PRIMARY KEY,
                device_id text COLLATE "C" NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                match_id text COLLATE "C" NOT NULL,
                environment text NOT NULL,
                phase text NOT NULL,
                update_token text,
                lifecycle text NOT NULL,
                updated_at timestamptz(3) NOT NULL
            )
            """,
            "CREATE INDEX activity_on_match_id ON activity (match_id, id)",
            "CREATE INDEX activity_on_device_id ON activity (device_id, id)",
            "CREATE INDEX activity_on_update_token ON activity (update_token)",
            """
            CREATE UNIQUE INDEX activity_open_update_token ON activity (update_token)
                WHERE update_token IS NOT NULL AND phase <> 'ended'
            """,
            "CREATE INDEX activity_open ON activity (id) WHERE phase <> 'ended'",
            """
            CREATE TABLE match_state (
                match_id text COLLATE "C" PRIMARY KEY,
                snapshot text NOT NULL,
                updated_at timestamptz(3) NOT NULL
            )
            """,
            // The outbox: deliveries saved with the activities that produced them, until every sink has
            // them. One per (activity, event); `seq` orders them (a replaced update is a new row).
            """
            CREATE TABLE outbox (
                seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
                activity_id text COLLATE "C" NOT NULL,
                event text NOT NULL,
                delivery_id text COLLATE "C" NOT NULL UNIQUE,
                delivery bytea NOT NULL,
                PRIMARY KEY (activity_id, event)
            )
            """,
            """
            CREATE TABLE dead_letter (
                delivery_id text COLLATE "C" NOT NULL,
                sink text COLLATE "C" NOT NULL,
                status integer NOT NULL,
                reason text NOT NULL,
                delivery bytea NOT NULL,
                recorded_at timestamptz(3) NOT NULL,
                PRIMARY KEY (delivery_id, sink)
            )
            """,
            "CREATE INDEX dead_letter_on_recorded_at ON dead_letter (recorded_at DESC, delivery_id, sink)",
        ]),
        // Which replica polls which match (`MatchLeases`): one row per match ever leased; a row whose
        // `expires_at` has passed is free to take. Times are the server's clock (`now()`), never a replica's.
        Migration(name: "v2", statements: [
            """
            CREATE TABLE match_lease (
                match_id text COLLATE "C" PRIMARY KEY,
                owner text NOT NULL,
                expires_at timestamptz(3) NOT NULL,
                generation bigint NOT NULL
            )
            """,
        ]),
        // Several replicas (`ReplicaStore`): the outbox knows each delivery's match, so the replica that takes a
        // match over sends what the last owner left; commands a replica posts for the match's owner wait in
        // `match_command` until done (the poster reads the outcome, then forgets it).
        Migration(name: "v3", statements: [
            "ALTER TABLE outbox ADD COLUMN match_id text COLLATE \"C\" NOT NULL DEFAULT ''",
            // Rows queued by an older broker learn their match from the delivery they hold.
            "UPDATE outbox SET match_id = COALESCE(convert_from(delivery, 'UTF8')::jsonb ->> 'matchId', '')",
            "CREATE INDEX outbox_on_match_id ON outbox (match_id, seq)",
            """
            CREATE TABLE match_command (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                match_id text COLLATE "C" NOT NULL,
                command text NOT NULL,
                posted_at timestamptz(3) NOT NULL DEFAULT now(),
                done_at timestamptz(3),
                refusal_code text,
                refusal_message text
            )
            """,
            "CREATE INDEX match_command_pending ON match_command (match_id, id) WHERE done_at IS NULL",
        ]),
        // Broadcast channels (iOS 18): a match's channel and its state machine (JSON), kept until APNs deleted it.
        Migration(name: "v4", statements: [
            """
            CREATE TABLE match_channel (
                match_id text COLLATE "C" PRIMARY KEY,
                channel_id text NOT NULL,
                phase text NOT NULL,
                state text NOT NULL,
                updated_at timestamptz(3) NOT NULL
            )
            """,
        ]),
        // Compact activities and a shared outbox payload, as SQLite's v4: `content_state` keeps each distinct content
        // of a match once and activities refer to it; the lifecycle moves from JSON into columns (dates in whole Unix
        // seconds, the held staleness in nanoseconds); `outbox_payload` keeps the match, headers and payload of queued
        // deliveries once per distinct payload, and an `outbox` row names its target and payload (a row queued before
        // v5 keeps its whole delivery in `delivery`).
        Migration(name: "v5", statements: [
            """
            CREATE TABLE content_state (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                match_id text COLLATE "C" NOT NULL,
                content text NOT NULL
            )
            """,
            "CREATE UNIQUE INDEX content_state_on_match_content ON content_state (match_id, md5(content))",
            """
            INSERT INTO content_state (match_id, content)
            SELECT DISTINCT match_id, content FROM (
                SELECT match_id, (lifecycle::json -> 'sentContent')::text AS content FROM activity
                UNION ALL SELECT match_id, (lifecycle::json -> 'held')::text FROM activity
                UNION ALL SELECT match_id, (lifecycle::json -> 'finalContent')::text FROM activity
            ) AS c WHERE content IS NOT NULL AND content <> 'null'
            ON CONFLICT DO NOTHING
            """,
            """
            ALTER TABLE activity
                ADD COLUMN last_timestamp bigint NOT NULL DEFAULT 0,
                ADD COLUMN sent_content bigint,
                ADD COLUMN sent_at bigint,
                ADD COLUMN sent_stale_date bigint,
                ADD COLUMN started_at bigint,
                ADD COLUMN held_content bigint,
                ADD COLUMN held_staleness bigint,
                ADD COLUMN end_held boolean NOT NULL DEFAULT false,
                ADD COLUMN final_content bigint,
                ADD COLUMN channel_id text
            """,
            """
            UPDATE activity AS a SET
                last_timestamp = COALESCE((l.j ->> 'lastTimestamp')::bigint, 0),
                sent_content = (SELECT c.id FROM content_state c
                    WHERE c.match_id = a.match_id AND md5(c.content) = md5((l.j -> 'sentContent')::text)),
                sent_at = extract(epoch FROM (l.j ->> 'sentAt')::timestamptz)::bigint,
                sent_stale_date = (l.j ->> 'sentStaleDate')::bigint,
                started_at = extract(epoch FROM (l.j ->> 'startedAt')::timestamptz)::bigint,
                held_content = (SELECT c.id FROM content_state c
                    WHERE c.match_id = a.match_id AND md5(c.content) = md5((l.j -> 'held')::text)),
                held_staleness = CASE WHEN json_typeof(l.j -> 'heldStaleness') = 'array' THEN
                    round(((l.j -> 'heldStaleness' ->> 0)::numeric * 18446744073709551616
                        + (l.j -> 'heldStaleness' ->> 1)::numeric) / 1000000000)::bigint END,
                end_held = COALESCE((l.j ->> 'endHeld')::boolean, false),
                final_content = (SELECT c.id FROM content_state c
                    WHERE c.match_id = a.match_id AND md5(c.content) = md5((l.j -> 'finalContent')::text)),
                channel_id = l.j ->> 'channelId'
            FROM (SELECT id, lifecycle::json AS j FROM activity) AS l
            WHERE l.id = a.id
            """,
            "ALTER TABLE activity DROP COLUMN lifecycle",
            """
            CREATE TABLE outbox_payload (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                match_id text COLLATE "C" NOT NULL,
                push_type text NOT NULL,
                topic text NOT NULL,
                priority integer NOT NULL,
                expiration bigint NOT NULL,
                payload bytea NOT NULL
            )
            """,
            """
            ALTER TABLE outbox
                ALTER COLUMN delivery DROP NOT NULL,
                ADD COLUMN target_kind text,
                ADD COLUMN target_value text,
                ADD COLUMN payload_id bigint
            """,
        ]),
        // A fan-out's writes, as SQLite's v5:
        // - `outbox_batch`: the outbox one row per run of deliveries sharing a payload (a fan-out chunk is one row),
        //   their ids, activities, events and targets packed in `entries` (`OutboxBatchEntries`), with the range of
        //   their activity ids so a newer save finds what it replaces without reading every batch. `entries` is
        //   stored out of line uncompressed: written once, read once, compression only costs CPU. `outbox` keeps what
        //   earlier versions queued, sent first.
        // - `activity` keeps half of each page free and is rewritten in id order (a fan-out's order): an update finds
        //   room for the new row version on its own page, so it is a HOT update that touches none of the five indexes,
        //   and the pages of one chunk are few and adjacent.
        Migration(name: "v6", statements: [
            """
            CREATE TABLE outbox_batch (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                match_id text COLLATE "C" NOT NULL,
                payload_id bigint NOT NULL,
                count integer NOT NULL,
                first_activity_id text COLLATE "C" NOT NULL,
                last_activity_id text COLLATE "C" NOT NULL,
                entries bytea NOT NULL
            )
            """,
            "ALTER TABLE outbox_batch ALTER COLUMN entries SET STORAGE EXTERNAL",
            "CREATE INDEX outbox_batch_on_match_id ON outbox_batch (match_id, id)",
            "ALTER TABLE activity SET (fillfactor = 50)",
            "CLUSTER activity USING activity_pkey",
        ]),
        // A chunk in one round trip: `PostgresStore+MigrationV7.swift`.
        v7,
        v8,
        // The refusals of each device's tokens (`TokenRefusal`), for its diagnostics; gone with the device. Only adds:
        // a replica of the build before runs beside it.
        Migration(name: "v9", statements: [
            """
            CREATE TABLE token_refusal (
                id bigserial PRIMARY KEY,
                device_id text COLLATE "C" NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                kind text NOT NULL,
                token text NOT NULL,
                activity_id text COLLATE "C",
                reason text NOT NULL,
                at timestamptz(3) NOT NULL
            )
            """,
            "CREATE INDEX token_refusal_on_device_id ON token_refusal (device_id, at)",
        ], readers: .any),
        // Each match's priority-10 pushes of the last hour (`HighPriorityLedger`). Only adds: a replica of the build
        // before runs beside it (its saves leave the column as it was: the ceiling then counts sends it did not make).
        Migration(name: "v10", statements: [
            "ALTER TABLE match_state ADD COLUMN high_priority_sends bigint[]",
        ], readers: .any),
        // When each update token was first reported (`UpdateTokenSighting`), for its device's diagnostics; gone with the
        // device. Only adds: a replica of the build before runs beside it (its tokens are not noted).
        Migration(name: "v11", statements: [
            """
            CREATE TABLE update_token_sighting (
                device_id text COLLATE "C" NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                token text COLLATE "C" NOT NULL,
                first_seen_at timestamptz(3) NOT NULL,
                PRIMARY KEY (device_id, token)
            )
            """,
            "CREATE INDEX update_token_sighting_on_first_seen_at ON update_token_sighting (first_seen_at)",
        ], readers: .any),
        // A match's contents that nothing refers to pruned as its fan-outs open new states:
        // `PostgresStore+MigrationV12.swift`.
        v12,
        // A queued chunk's arrays compressed with lz4: `PostgresStore+MigrationV13.swift`.
        v13,
        // A fan-out chunk prunes only when it takes its match's contents' lock at once; every save shares it:
        // `PostgresStore+MigrationV14.swift`.
        v14,
        // Lease rows packed half full, so that a renewal (every lease a replica holds, a third of the lease's time)
        // rewrites each row in its own page (a heap-only update: no index entry, less WAL) rather than moving it to
        // another. Pages already full keep their rows until an update moves them. Only sets a storage parameter: a
        // replica of the build before runs beside it. (docs/performance.md, "Lease renewals on PostgreSQL".)
        Migration(name: "v15", statements: [
            "ALTER TABLE match_lease SET (fillfactor = 50)",
        ], readers: .any),
        // The relay's removal reads as many queued chunks as it has ids left to find, not the whole queue:
        // `PostgresStore+MigrationV16.swift`.
        v16,
        // Later migrations go here (`v17`, ...).
    ]

    /// Applies the pending migrations, on a connection of its own (the client need not run yet).
    public func migrate() async throws(StoreError) {
        try await migrate(upTo: nil)
    }

    /// Applies the pending migrations up to and including the one named `last` (every one when `nil`): the upgrade
    /// tests build a database as an earlier release left it.
    func migrate(upTo last: String?) async throws(StoreError) {
        let pending: ArraySlice<Migration>
        if let last {
            guard let end = Self.migrations.firstIndex(where: { $0.name == last }) else {
                throw .invalid("no migration named '\(last)'")
            }
            pending = Self.migrations[...end]
        } else {
            pending = Self.migrations[...]
        }
        let configuration = self.configuration
        let logger = self.logger
        // Per schema: tests (and brokers sharing a database) migrate their own schemas side by side. Taken before
        // the schema is created: two `CREATE SCHEMA IF NOT EXISTS` at once can still collide.
        let lockKey = "matchcast.migrate." + (configuration.schema ?? "")
        try await withMigrationConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(hashtext(\(lockKey)))", logger: logger).consume()
            if let schema = configuration.schema {
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""), logger: logger)
                    .consume()
            }
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name text PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            ).consume()
            // Which builds can use the database after each migration (rows from before this column: NULL, "only
            // builds that know it", which is what every earlier build assumed of every migration).
            try await connection.query("ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS readers text", logger: logger)
                .consume()
            let applied = try await Self.appliedRows(connection, logger: logger)
            let newer = try Self.checkReadable(applied)
            if !newer.isEmpty {
                logger.warning("the database has migrations of a newer matchcast; this build runs beside them", metadata: [
                    "migrations": "\(newer.joined(separator: ", "))",
                ])
            }
            let done = Set(applied.map(\.name))
            for migration in pending where !done.contains(migration.name) {
                try await Self.inTransaction(connection, logger: logger) { connection in
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).consume()
                    }
                    try await connection.query(
                        "INSERT INTO schema_migrations (name, readers) VALUES (\(migration.name), \(migration.readers.column))",
                        logger: logger
                    ).consume()
                }
                logger.info("applied migration", metadata: ["migration": "\(migration.name)"])
            }
            // Closing the connection releases the lock too; this is for when closing fails.
            try await connection.query("SELECT pg_advisory_unlock(hashtext(\(lockKey)))", logger: logger).consume()
        }
    }

    /// The names of the migrations applied to this database, in order (for `matchcast migrate`).
    public func appliedMigrations() async throws(StoreError) -> [String] {
        let logger = self.logger
        return try await withConnection("reading migrations") { connection in
            try await Self.appliedMigrations(connection, logger: logger)
        }
    }

    private static func appliedMigrations(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        try await appliedRows(connection, logger: logger).map(\.name)
    }

    /// A row of `schema_migrations`: the migration, and which builds can use the database after it (the column).
    struct AppliedMigration: Sendable, Hashable {
        var name: String
        var readers: String?
    }

    private static func appliedRows(_ connection: PostgresConnection, logger: Logger) async throws -> [AppliedMigration] {
        let rows = try await connection.query(
            "SELECT name, readers FROM schema_migrations ORDER BY applied_at, name", logger: logger
        ).collect((String, String?).self).map { AppliedMigration(name: $0.0, readers: $0.1) }
        // Applied order is the list's order; sort by it so equal timestamps cannot reorder them.
        let order = Dictionary(uniqueKeysWithValues: migrations.enumerated().map { ($1.name, $0) })
        return rows.sorted { (order[$0.name] ?? .max, $0.name) < (order[$1.name] ?? .max, $1.name) }
    }

    /// Throws unless this build is among the readers of every applied migration; returns the applied migrations it
    /// does not know (a newer build's, which need nothing it lacks).
    static func checkReadable(_ applied: [AppliedMigration], known: [String] = migrations.map(\.name)) throws(StoreError) -> [String] {
        let knownNames = Set(known)
        for row in applied {
            guard let required = Migration.Readers.required(name: row.name, column: row.readers), !knownNames.contains(required)
            else { continue }
            let detail = required == row.name
                ? "migration '\(row.name)' changes what earlier builds read"
                : "migration '\(row.name)' needs a build that knows migration '\(required)'"
            throw .configuration(
                "the database was migrated by a newer matchcast (\(detail); this build knows \(known.first ?? "")…\(known.last ?? "")); "
                    + "refusing to use it with this version: run the newer build")
        }
        return applied.map(\.name).filter { !knownNames.contains($0) }
    }

    /// One connection outside the pool: it fails at once (or after `connectTimeout`) when the server cannot be
    /// reached, where a pool would keep retrying.
    func withMigrationConnection(_ body: @Sendable (PostgresConnection) async throws -> Void) async throws(StoreError) {
        let connection = try await connectOutsidePool(timeout: configuration.connectTimeout)
        do {
            try await body(connection)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw StoreError(postgres: error, while: "migrating the PostgreSQL database at \(configuration.endpoint)")
        }
    }

    /// Whether the server takes a connection now: `PostgresReachability`'s check, at most five seconds (a busy server
    /// on a loaded host has been seen to take over two to start a connection's backend; it is not away for that).
    func attemptConnection() async throws(StoreError) {
        let connection = try await connectOutsidePool(timeout: min(configuration.connectTimeout, .seconds(5)))
        try? await connection.close()
    }

    func connectOutsidePool(timeout: Duration) async throws(StoreError) -> PostgresConnection {
        do {
            var connectionConfiguration = PostgresConnection.Configuration(
                host: configuration.host, port: configuration.port, username: configuration.username,
                password: configuration.password, database: configuration.database,
                tls: try Self.connectionTLS(configuration.tls))
            connectionConfiguration.options.connectTimeout = .nanoseconds(
                Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
            connectionConfiguration.options.additionalStartupParameters = Self.startupParameters(configuration)
            return try await PostgresConnection.connect(configuration: connectionConfiguration, id: 0, logger: logger)
        } catch let error as PSQLError {
            let message = "cannot connect to PostgreSQL at \(configuration.endpoint): \(StoreError.describe(error))"
            throw StoreError.isConfigurationProblem(error) ? .configuration(message) : .database(message)
        } catch {
            throw .configuration("cannot connect to PostgreSQL at \(configuration.endpoint): \(error)")
        }
    }

    /// Drops the store's schema with everything in it: for tests, each in a schema of its own.
    func dropSchema() async throws(StoreError) {
        guard let schema = configuration.schema else { throw .configuration("no schema of its own to drop") }
        let logger = self.logger
        try await withMigrationConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: logger)
                .consume()
        }
    }
}
