import Foundation

/// Where the broker keeps its state, as configured (`--store`, `store:` in the config file):
///
/// - `sqlite:PATH` (also `sqlite://PATH`): a SQLite file, created with its directories if missing;
/// - `sqlite::memory:`: a SQLite database in memory;
/// - `memory`: `InMemoryStore`, no SQL at all.
public struct StoreURL: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Sendable, Hashable {
        case memory
        case sqliteMemory
        case sqliteFile(path: String)
    }

    private let kind: Kind

    /// Parses a store URL; `.configuration` naming the value when it is not one.
    public init(_ text: String) throws(StoreError) {
        let value = text.trimmingCharacters(in: .whitespaces)
        if value == "memory" {
            kind = .memory
        } else if value == "sqlite::memory:" {
            kind = .sqliteMemory
        } else if value.hasPrefix("sqlite:") {
            var path = String(value.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else {
                throw .configuration("store URL '\(value)' has no path; use sqlite:PATH, sqlite::memory: or memory")
            }
            kind = .sqliteFile(path: path)
        } else if value.hasPrefix("postgres:") || value.hasPrefix("postgresql:") {
            throw .configuration("store URL '\(Self.redacted(value))': postgres is not supported yet; use sqlite:PATH or memory")
        } else {
            throw .configuration("unknown store URL '\(Self.redacted(value))'; use sqlite:PATH, sqlite::memory: or memory")
        }
    }

    /// The SQLite file, when the store is one.
    public var sqlitePath: String? {
        if case .sqliteFile(let path) = kind { path } else { nil }
    }

    public var description: String {
        switch kind {
        case .memory: "memory"
        case .sqliteMemory: "sqlite::memory:"
        case .sqliteFile(let path): "sqlite:\(path)"
        }
    }

    /// Opens the store, migrating a SQLite database to the current schema.
    public func makeStore() throws(StoreError) -> any MatchcastStore {
        switch kind {
        case .memory: InMemoryStore()
        case .sqliteMemory: try SQLiteStore.inMemory()
        case .sqliteFile(let path): try SQLiteStore(path: path)
        }
    }

    /// The value without a password (`scheme://user:secret@host` → `scheme://user:***@host`), for messages.
    private static func redacted(_ value: String) -> String {
        guard let scheme = value.range(of: "://"),
              let at = value[scheme.upperBound...].firstIndex(of: "@") else { return value }
        let userInfo = value[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return value }
        return String(value[..<colon]) + ":***" + String(value[at...])
    }
}
