import Foundation
import MatchcastCore
@testable import MatchcastStore
import MatchcastTesting
import PostgresNIO
import Testing

private typealias F = StoreFixture

/// What only PostgreSQL has: migrations in `schema_migrations`, connection errors, schemas, its own SQL. The
/// contract suite runs on it too (`StoreKind.postgres`).
@Suite("PostgreSQL store", .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
struct PostgresStoreTests {
    @Test func migrationsAreRecordedAndAppliedOnceAcrossOpens() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { first in
            #expect(try await first.appliedMigrations() == PostgresStore.migrations.map(\.name))
            try await first.createDevice(F.device("dev-a"))
        }
        // A second broker (or a restart) opening the same schema: nothing to apply, the data is still there.
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: true) { second in
            #expect(try await second.appliedMigrations() == PostgresStore.migrations.map(\.name))
            #expect(try await second.device(id: "dev-a") == F.device("dev-a"))
            try await second.migrate()
            #expect(try await second.appliedMigrations() == PostgresStore.migrations.map(\.name))
        }
    }

    /// v15: lease rows are written half full, so that a renewal can rewrite each in its own page.
    @Test func leaseRowsArePackedHalfFullFromV15() async throws {
        try await PostgresTestServer.withFreshStore { store in
            let options = try await store.withConnection("reading match_lease's storage parameters") { connection in
                try await connection.query(
                    "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'match_lease'::regclass",
                    logger: store.logger
                ).collect(String.self)
            }
            #expect(options == ["fillfactor=50"])
        }
    }

    /// v16: the relay's removal of what it sent reads the chunks at the head of the queue that hold those ids, not
    /// the whole queue (v7 to v15 summed a window of up to 4,096 chunks, whatever it removed).
    @Test func aRemovalReadsTheHeadOfTheQueueNotAllOfIt() async throws {
        try await PostgresTestServer.withFreshStore(writeLinger: .zero) { store in
            let queued = 120
            for index in 0..<queued {
                try await store.saveActivities([], enqueue: [Outbox.delivery("dlv_\(index)", activity: "act-\(index)", .update)])
            }
            // The rows this backend's scans of `outbox_chunk` returned and fetched, read before and after the removal
            // in one transaction: the counters hold what the connection has not reported yet (earlier transactions'
            // too), so only the difference is the removal's. Sequential scans are off in it: a table this small is
            // cheaper to scan whole whatever the function asks for, and what is measured is what it asks for.
            let read = try await store.withConnection("removing the head of the queue") { connection in
                func rowsRead() async throws -> Int64 {
                    try await connection.query(
                        """
                        SELECT pg_stat_get_xact_tuples_returned('outbox_chunk'::regclass)
                            + pg_stat_get_xact_tuples_fetched('outbox_chunk'::regclass)
                        """,
                        logger: store.logger
                    ).collect(Int64.self).first ?? -1
                }
                try await connection.query("BEGIN", logger: store.logger).consume()
                try await connection.query("SET LOCAL enable_seqscan = off", logger: store.logger).consume()
                let before = try await rowsRead()
                try await connection.query("SELECT matchcast_unqueue(ARRAY['dlv_0', 'dlv_1'])", logger: store.logger).consume()
                let after = try await rowsRead()
                try await connection.query("COMMIT", logger: store.logger).consume()
                return after - before
            }
            #expect(read >= 0)
            #expect(read < 30, "a removal of 2 ids read \(read) chunk rows of \(queued)")
            let left = try await store.queuedDeliveries(limit: 5).map(\.id)
            #expect(left == ["dlv_2", "dlv_3", "dlv_4", "dlv_5", "dlv_6"])
            #expect(try await store.queuedDeliveryCount() == queued - 2)

            // Ids further in than the head are still found, a page at a time.
            try await store.removeQueuedDeliveries(ids: ["dlv_119", "dlv_60"])
            #expect(try await store.queuedDeliveryCount() == queued - 4)
            #expect(try await store.queuedDeliveries(limit: 500).map(\.id).contains("dlv_60") == false)
        }
    }

    @Test func replicasStartingTogetherMigrateOnce() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        let stores = try (0..<4).map { _ in try PostgresStore(configuration: configuration) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { try await store.migrate() } }
            try await group.waitForAll()
        }
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: true) { store in
            #expect(try await store.appliedMigrations() == PostgresStore.migrations.map(\.name))
            try await store.ping()
        }
    }

    @Test func aSchemaMigratedByANewerVersionIsRefused() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { store in
            try await store.withConnection("test") { connection in
                try await connection.query("INSERT INTO schema_migrations (name) VALUES ('v99')", logger: store.logger).consume()
            }
        }
        let error = await #expect(throws: StoreError.self) { _ = try await PostgresStore.open(configuration) }
        #expect(error == .configuration)
        #expect(error?.message.contains("newer matchcast") == true)
        try await PostgresStore(configuration: configuration).dropSchema()
    }

    @Test("a newer build's migrations: run beside the ones that only add, refuse the ones that need a newer build")
    func rollingUpgradeCompatibility() async throws {
        let configuration = try PostgresTestServer.freshConfiguration()
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { store in
            try await store.createDevice(F.device("dev-a"))
            try await PostgresTestServer.applyNewerExpandMigration(store)
        }
        // The older build opens it (no error), keeps its data and writes beside the newer columns.
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { store in
            #expect(try await store.appliedMigrations() == PostgresStore.migrations.map(\.name) + ["v900"])
            #expect(try await store.device(id: "dev-a") == F.device("dev-a"))
            try await store.createDevice(F.device("dev-b"))
            // A contract that names a migration this build knows as the oldest reader: still fine.
            try await store.withConnection("test") { connection in
                try await connection.query("INSERT INTO schema_migrations (name, readers) VALUES ('v901', 'v8')", logger: store.logger)
                    .consume()
            }
        }
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: false) { store in
            #expect(try await store.device(id: "dev-b") == F.device("dev-b"))
            // Then a contract that needs a build knowing 'v901': this build refuses, naming why.
            try await store.withConnection("test") { connection in
                try await connection.query("INSERT INTO schema_migrations (name, readers) VALUES ('v902', 'v901')", logger: store.logger)
                    .consume()
            }
        }
        let error = await #expect(throws: StoreError.self) { _ = try await PostgresStore.open(configuration) }
        #expect(error == .configuration)
        #expect(error?.message.contains("migration 'v902' needs a build that knows migration 'v901'") == true, "\(String(describing: error))")
        try await PostgresStore(configuration: configuration).dropSchema()
    }

    @Test("which builds can read a database: rows before the readers column, expand, contract, contract naming an earlier one")
    func readersRule() throws {
        typealias Row = PostgresStore.AppliedMigration
        let known = ["v1", "v2", "v3"]
        #expect(try PostgresStore.checkReadable([Row(name: "v1", readers: nil), Row(name: "v2", readers: "")], known: known).isEmpty)
        #expect(try PostgresStore.checkReadable([Row(name: "v1", readers: nil), Row(name: "v4", readers: "")], known: known) == ["v4"])
        #expect(try PostgresStore.checkReadable([Row(name: "v4", readers: "v2"), Row(name: "v5", readers: "")], known: known) == ["v4", "v5"])
        #expect(throws: StoreError.self) { try PostgresStore.checkReadable([Row(name: "v4", readers: nil)], known: known) }
        #expect(throws: StoreError.self) { try PostgresStore.checkReadable([Row(name: "v5", readers: "v4")], known: known) }
        #expect(PostgresStore.Migration.Readers.knowing("v2").column == "v2")
        #expect(PostgresStore.Migration.Readers.any.column == "")
        #expect(PostgresStore.Migration.Readers.knowingThis.column == nil)
        // v1...v8 each reshaped what the one before read: each needs builds that know it. v9 only adds a table, v10 a
        // nullable column, v11 a table.
        #expect(PostgresStore.migrations.prefix(8).allSatisfy { $0.readers == .knowingThis })
        #expect(PostgresStore.migrations.first { $0.name == "v9" }?.readers == .any)
        #expect(PostgresStore.migrations.first { $0.name == "v10" }?.readers == .any)
        #expect(PostgresStore.migrations.first { $0.name == "v11" }?.readers == .any, "a table of its own")
    }

    @Test func anUnreachableServerIsAClearErrorNotAHang() async throws {
        // A port held without a listener: refused at once, and nothing else can take it meanwhile.
        let refusing = try ReservedPort()
        let port = refusing.port
        var configuration = PostgresStore.Configuration(
            host: "127.0.0.1", port: port, username: "matchcast", password: "s3cret", database: "matchcast",
            tls: .disable, connectTimeout: .seconds(5))
        let error = await #expect(throws: StoreError.self) { _ = try await PostgresStore.open(configuration) }
        #expect(error == .database)
        let message = error?.message ?? ""
        #expect(message.contains("cannot connect to PostgreSQL at matchcast@127.0.0.1:\(port)/matchcast"), "\(message)")
        #expect(!message.contains("s3cret"))

        // With the pool running, a call does not wait out the lease timeout for a connection the pool cannot make:
        // it fails after a look at the server (`PostgresReachability`), naming it; so does the next one.
        configuration.leaseTimeout = .seconds(120)
        let store = try PostgresStore(configuration: configuration)
        try await withStoreRunning(store) {
            let clock = ContinuousClock()
            for call in 1...2 {
                let started = clock.now
                let pingError = await #expect(throws: StoreError.self) { try await store.ping() }
                #expect(pingError == .database)
                #expect(pingError?.message.contains("PostgreSQL at matchcast@127.0.0.1:\(port)/matchcast cannot be reached") == true,
                        "\(pingError?.message ?? "")")
                #expect(clock.now - started < .seconds(60), "call \(call) waited \(clock.now - started), not the lease timeout")
            }
        }
        withExtendedLifetime(refusing) {}
    }

    @Test("a busy pool is not an unreachable server: a call waits past the reachability check for its connection",
          .enabled(if: PostgresTestServer.isConfigured, PostgresTestServer.skipMessage))
    func aBusyPoolStillWaits() async throws {
        var configuration = try PostgresTestServer.freshConfiguration()
        configuration.maximumConnections = 1
        try await PostgresTestServer.withStore(configuration: configuration, dropAfterwards: true) { store in
            let logger = store.logger
            let holding = Task {
                try await store.withConnection("holding the only connection") { connection in
                    try await connection.query("SELECT pg_sleep(2)", logger: logger).consume()
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            // Waits behind the holder for longer than the reachability check's patience, and gets its connection.
            try await store.ping()
            try await holding.value
        }
    }

    @Test("the lease timer ends when due, and at once when its call no longer needs it (cancelled)")
    func leaseTimerEndsWhenDueOrCancelled() async throws {
        let clock = ContinuousClock()
        let due = clock.now
        try await PostgresStore.leaseTimer(.milliseconds(50))
        #expect(clock.now - due >= .milliseconds(50))

        let started = clock.now
        let waiting = Task { try await PostgresStore.leaseTimer(.seconds(600)) }
        waiting.cancel()
        await #expect(throws: (any Error).self) { try await waiting.value }
        #expect(clock.now - started < .seconds(60), "a cancelled timer does not wait out its 600 s")
    }

    @Test func aRefusedLoginIsAConfigurationError() async throws {
        var configuration = try PostgresTestServer.freshConfiguration()
        configuration.database = "matchcast_no_such_database"
        let error = await #expect(throws: StoreError.self) { _ = try await PostgresStore.open(configuration) }
        #expect(error == .configuration)
        #expect(error?.message.contains("matchcast_no_such_database") == true)
        #expect(error?.message.contains("3D000") == true)
    }

    @Test func theStoreURLOpensAMigratedPostgresStore() async throws {
        let url = try StoreURL(try #require(PostgresTestServer.url))
        let store = try await url.makeStore()
        let postgres = try #require(store as? PostgresStore)
        try await withStoreRunning(store) {
            try await store.ping()
            #expect(try await postgres.appliedMigrations() == PostgresStore.migrations.map(\.name))
        }
    }

    @Test func aBadSchemaNameIsRefusedBeforeAnySQL() throws {
        var configuration = PostgresStore.Configuration(host: "127.0.0.1", username: "u")
        configuration.schema = "x\"; DROP TABLE device; --"
        let error = #expect(throws: StoreError.self) { _ = try PostgresStore(configuration: configuration) }
        #expect(error == .configuration)
    }

    @Test func datesKeepMillisecondsAndTextSortsByCodePoint() async throws {
        try await PostgresTestServer.withFreshStore { store in
            let instant = Date(timeIntervalSince1970: 1_776_780_000.123_789)
            try await store.createDevice(DeviceRecord(id: "dev-a", secretHash: "h", createdAt: instant))
            let read = try #require(try await store.device(id: "dev-a"))
            #expect(read.createdAt == Date(timeIntervalSince1970: 1_776_780_000.123))
            // Byte order whatever the database's locale: uppercase before lowercase, as Swift sorts.
            for id in ["b", "B", "a", "A", "_"] { _ = try await store.addFollow(F.follow("dev-a", id)) }
            #expect(try await store.follows(deviceId: "dev-a").map(\.matchId) == ["A", "B", "_", "a", "b"])
        }
    }

    @Test func aDamagedActivityRowIsCorruptNotACrash() async throws {
        try await PostgresTestServer.withFreshStore { store in
            try await store.createDevice(F.device("dev-a"))
            let lifecycle = try F.drivenLifecycle()
            try await store.saveActivity(ActivityRecord(deviceId: "dev-a", environment: .production, lifecycle: lifecycle, updatedAt: F.at(23)))
            try await store.withConnection("test") { connection in
                try await connection.query("UPDATE activity_row SET environment = 'staging'", logger: store.logger).consume()
            }
            await #expect(throws: StoreError.corrupt) { _ = try await store.activity(id: "act_1") }
            await #expect(throws: StoreError.corrupt) { _ = try await store.openActivities() }
            #expect(try await store.deleteActivity(id: "act_1"))
            #expect(try await store.openActivities().isEmpty)
        }
    }

    @Test func aTokenRaceIsStoppedByTheUniqueIndexAsAConflict() async throws {
        // Two writers that both passed the holder check: the index refuses the second (SQLSTATE 23505).
        try await PostgresTestServer.withFreshStore { store in
            try await store.createDevice(F.device("dev-a"))
            try await store.saveActivity(F.activity("act-1", token: "upd-t"))
            let error = await #expect(throws: StoreError.self) {
                try await store.withConnection("inserting behind the check") { connection in
                    try await connection.query(
                        """
                        INSERT INTO activity_row (id, device_id, match_id, environment, phase, update_token, last_timestamp,
                            end_held, updated_at)
                        SELECT 'act-2', device_id, match_id, environment, phase, update_token, last_timestamp, end_held,
                            updated_at
                        FROM activity_row WHERE id = 'act-1'
                        """,
                        logger: store.logger
                    ).consume()
                }
            }
            #expect(error == .conflict)
            #expect(error?.message.contains("23505") == true)
        }
    }
}
