import Foundation
@testable import MatchcastStore
import Testing

/// The implementations the contract suite runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case inMemory
    /// A real file in a fresh temporary directory, removed afterwards (not `:memory:`: WAL and
    /// the pool only exist for files).
    case sqliteFile
    /// A fresh schema of its own in the database `MATCHCAST_POSTGRES_URL` names, dropped afterwards, so tests
    /// run side by side without seeing each other. Only listed when that variable is set (`Scripts/postgres`);
    /// `PostgresStoreTests` then reports the PostgreSQL tests as skipped.
    case postgres
    /// The same, after a newer build applied an expand migration this build does not know (new columns in every
    /// table, a new table): a replica of the older build during a rolling upgrade keeps every contract.
    case postgresBesideNewerSchema

    static var allCases: [StoreKind] {
        PostgresTestServer.isConfigured
            ? [.inMemory, .sqliteFile, .postgres, .postgresBesideNewerSchema] : [.inMemory, .sqliteFile]
    }

    var testDescription: String { rawValue }

    /// Runs `body` against a fresh, empty store of this kind, then cleans up.
    func withStore(_ body: (any MatchcastStore) async throws -> Void) async throws {
        switch self {
        case .inMemory:
            try await body(InMemoryStore())
        case .sqliteFile:
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = try SQLiteStore(path: directory.path("store.sqlite"))
            try await body(store)
            try store.close()
        case .postgres:
            try await PostgresTestServer.withFreshStore { store in try await body(store) }
        case .postgresBesideNewerSchema:
            try await PostgresTestServer.withFreshStoreBesideNewerSchema { store in try await body(store) }
        }
    }
}

/// A unique directory under the system temporary directory.
struct TemporaryDirectory: Sendable {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("matchcast-store-tests-\(UUID().uuidString)", isDirectory: true)

    func path(_ relative: String) -> String { url.appendingPathComponent(relative).path }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
