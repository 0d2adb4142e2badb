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

    @Test func postgresIsNotSupportedYetAndItsPasswordStaysOutOfTheMessage() {
        let error = #expect(throws: StoreError.self) { try StoreURL("postgres://matchcast:s3cret@db:5432/matchcast") }
        #expect(error == .configuration)
        let message = error?.message ?? ""
        #expect(message.contains("postgres is not supported yet"))
        #expect(!message.contains("s3cret"))
        #expect(message.contains("postgres://matchcast:***@db:5432/matchcast"))
    }

    @Test func memoryMakesAnInMemoryStore() async throws {
        let store = try StoreURL("memory").makeStore()
        #expect(store is InMemoryStore)
        let sqlite = try StoreURL("sqlite::memory:").makeStore()
        #expect(sqlite is SQLiteStore)
        try await sqlite.ping()
    }

    @Test func aFileURLMakesASQLiteStoreAtThatPath() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("nested/store.sqlite")
        let store = try StoreURL("sqlite:\(path)").makeStore()
        try await store.ping()
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
