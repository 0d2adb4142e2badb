import Foundation
import PostgresNIO

extension StoreError {
    /// Maps whatever a PostgreSQL call threw, as `StoreError(_:while:)` does for SQLite: a unique violation is
    /// `.conflict`, a foreign key violation `.notFound`, damaged data `.corrupt`, the rest `.database`.
    /// `what` names the operation. Never prints a query's bound values (they can hold tokens).
    init(postgres error: any Error, while what: String) {
        switch error {
        case let error as StoreError:
            self = error
        case let error as PSQLError:
            let detail = "\(what): \(Self.describe(error))"
            switch error.serverInfo?[.sqlState] {
            case "23505": self = .conflict(detail)  // unique_violation
            case "23503": self = .notFound(detail)  // foreign_key_violation
            case "XX001", "XX002": self = .corrupt(detail)  // data_corrupted, index_corrupted
            default: self = .database(detail)
            }
        case is PostgresDecodingError:
            // Its description holds the raw column bytes: name the column only.
            let decoding = error as! PostgresDecodingError
            self = .corrupt("\(what): column '\(decoding.columnName)' cannot be read as \(decoding.targetType)")
        case is CancellationError:
            self = .database("\(what): cancelled")
        default:
            self = .database("\(what): \(error)")
        }
    }

    /// What PostgreSQL said (SQLSTATE and message, never the detail, which can quote values), or why the
    /// connection failed.
    static func describe(_ error: PSQLError) -> String {
        if let info = error.serverInfo {
            let state = info[.sqlState] ?? "?"
            return "\(info[.message] ?? "server error") (SQLSTATE \(state))"
        }
        if let underlying = error.underlying {
            return "\(error.code): \(underlying)"
        }
        return "\(error.code)"
    }

    /// SQLSTATEs that mean the settings are wrong rather than the server being away: refused login, missing
    /// database, no permission.
    static func isConfigurationProblem(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else {
            return error.code == .sslUnsupported || error.code == .unsupportedAuthMechanism
                || error.code == .authMechanismRequiresPassword || error.code == .saslError
        }
        return state.hasPrefix("28") || state == "3D000" || state == "42501" || state == "3F000"
    }

    /// Whether `error` says the server went away (it is shutting down, or cannot be connected to) rather than that
    /// one statement or one connection failed: the pool that met it is replaced (`PostgresPools`). A server that died
    /// without a word is found by the calls that then wait for a connection (`PostgresReachability`).
    static func lostServer(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            // admin_shutdown, crash_shutdown, cannot_connect_now.
            return state.hasPrefix("57P")
        }
        return error.code == .connectionError
    }
}
