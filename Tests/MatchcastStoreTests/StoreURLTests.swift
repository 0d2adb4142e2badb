import Foundation
import MatchcastStore
import Testing

@Suite("Store URL")
struct StoreURLTests {
    @Test(arguments: [
        ("memory", "memory", nil),
        ("sqlite::memory:", "sqlite::memory:", nil),
        ("sqlite:matchcast.sqlite", "sqlite:matchcast.sqlite", "matchcast.sqlite"),
        ("sqlite:/var/lib/matchcast/store.sqlite", "sqlite:/var/lib/matchcast/store.sqlite", "/var/lib/matchcast/store.sqlite"),
        ("sqlite:///var/lib/matchcast/store.sqlite", "sqlite:/var/lib/matchcast/store.sqlite", "/var/lib/matchcast/store.sqlite"),
        (" sqlite:data/x.db ", "sqlite:data/x.db", "data/x.db"),
    ] as [(String, String, String?)])
    func parses(_ text: String, _ canonical: String, _ path: String?) throws {
        let url = try StoreURL(text)
        #expect(url.description == canonical)
        #expect(url.sqlitePath == path)
    }

    @Test(arguments: ["", "sqlite:", "sqlite://", "mysql://db/matchcast", "file:store.sqlite", "Memory"])
    func rejectsOthersNamingTheValue(_ text: String) {
        let error = #expect(throws: StoreError.self) { try StoreURL(text) }
        #expect(error == .configuration)
        #expect(error?.message.contains("'\(text.trimmingCharacters(in: .whitespaces))'") == true)
    }

    @Test(arguments: [
        ("postgres://matchcast:s3cret@db.example:6543/broker?sslmode=require",
         "postgres://matchcast:***@db.example:6543/broker?sslmode=require", "db.example", 6543, "broker", "require"),
        ("postgresql://matchcast@10.0.0.5/matchcast", "postgres://matchcast@10.0.0.5:5432/matchcast", "10.0.0.5", 5432,
         "matchcast", "prefer"),
        ("postgres://u:p%40ss@[::1]:5433?sslmode=disable&connect_timeout=3",
         "postgres://u:***@[::1]:5433?sslmode=disable&connect_timeout=3", "::1", 5433, nil, "disable"),
        ("postgres://u@h/db?sslmode=verify-full", "postgres://u@h:5432/db?sslmode=verify-full", "h", 5432, "db", "verify-full"),
        ("postgres://u@h/db?keepalive=0&pool_size=20", "postgres://u@h:5432/db", "h", 5432, "db", "prefer"),
    ] as [(String, String, String, Int, String?, String)])
    func parsesPostgres(_ text: String, _ canonical: String, _ host: String, _ port: Int, _ database: String?, _ tls: String) throws {
        let url = try StoreURL(text)
        #expect(url.description == canonical)
        #expect(url.sqlitePath == nil)
        let configuration = try #require(url.postgresConfiguration)
        #expect(configuration.host == host)
        #expect(configuration.port == port)
        #expect(configuration.database == database)
        #expect(configuration.tls.rawValue == tls)
        #expect(!"\(url)".contains("s3cret") && !"\(url)".contains("p@ss"))
    }

    @Test("pool_size sizes the fixed pool; keepalive turns the idle check on (off by default)")
    func poolSizeAndKeepAlive() throws {
        let plain = try #require(try StoreURL("postgres://u@h/db").postgresConfiguration)
        #expect(plain.maximumConnections == 20)
        #expect(plain.keepAlive == nil)
        let url = try StoreURL("postgres://u@h/db?pool_size=8&keepalive=30")
        let configuration = try #require(url.postgresConfiguration)
        #expect(configuration.maximumConnections == 8)
        #expect(configuration.keepAlive == .seconds(30))
        #expect(url.description == "postgres://u@h:5432/db?pool_size=8&keepalive=30")
        #expect(try StoreURL(url.description) == url)
    }

    @Test func aPostgresPasswordIsDecodedButNeverShown() throws {
        let url = try StoreURL("postgres://app:p%40ss%2Fw0rd@db/matchcast")
        #expect(url.postgresConfiguration?.password == "p@ss/w0rd")
        #expect(url.postgresConfiguration?.username == "app")
        #expect(url.description == "postgres://app:***@db:5432/matchcast")
        #expect(try StoreURL("postgres://app:other@db/matchcast") != url)
        #expect(try StoreURL("postgres://app:p%40ss%2Fw0rd@db:5432/matchcast") == url)
    }

    @Test(arguments: [
        ("postgres://db/matchcast", "has no user"),
        ("postgres://u:s3cret@/matchcast", "has no host"),
        ("postgres://u:s3cret@db:0/matchcast", "out of range"),
        ("postgres://u:s3cret@db/matchcast?sslmode=maybe", "sslmode 'maybe' is not one of disable, prefer, require, verify-full"),
        ("postgres://u:s3cret@db/matchcast?connect_timeout=soon", "connect_timeout 'soon'"),
        ("postgres://u:s3cret@db/matchcast?pool=9", "unknown parameter 'pool'"),
        ("postgres://u:s3cret@db/matchcast?pool_size=0", "pool_size '0'"),
        ("postgres://u:s3cret@db/matchcast?pool_size=many", "pool_size 'many'"),
        ("postgres://u:s3cret@db/matchcast?keepalive=-1", "keepalive '-1'"),
        ("postgres://u:s3cret@db/a/b", "'a/b' is not a database name"),
    ])
    func rejectsABadPostgresURLClearlyWithoutItsPassword(_ text: String, _ reason: String) {
        let error = #expect(throws: StoreError.self) { try StoreURL(text) }
        #expect(error == .configuration)
        let message = error?.message ?? ""
        #expect(message.contains(reason), "\(message)")
        #expect(!message.contains("s3cret"))
    }

    @Test func memoryMakesAnInMemoryStoreWithoutAnOutbox() async throws {
        let store = try await StoreURL("memory").makeStore()
        #expect(store is InMemoryStore)
        // Nothing of it outlives the process, so nothing would ever read an outbox back: the relay holds what is unsent.
        #expect(!store.keepsOutbox)
        #expect(try SQLiteStore.inMemory().keepsOutbox)
        let sqlite = try await StoreURL("sqlite::memory:").makeStore()
        #expect(sqlite is SQLiteStore)
        try await sqlite.ping()
    }

    @Test func aFileURLMakesASQLiteStoreAtThatPath() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("nested/store.sqlite")
        let store = try await StoreURL("sqlite:\(path)").makeStore()
        try await store.ping()
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
