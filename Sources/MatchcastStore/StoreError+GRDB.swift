import Foundation
internal import GRDB

extension StoreError {
    /// Maps whatever a database call threw; `what` names the operation in the message.
    init(_ error: any Error, while what: String) {
        switch error {
        case let error as StoreError:
            self = error
        case let error as DatabaseError:
            let detail = "\(what): \(error.message ?? "SQLite error \(error.extendedResultCode.rawValue)")"
            switch error.extendedResultCode {
            case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY, .SQLITE_CONSTRAINT_TRIGGER:
                self = .conflict(detail)
            case .SQLITE_CONSTRAINT_FOREIGNKEY:
                self = .notFound(detail)
            default:
                switch error.resultCode {
                case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                    self = .corrupt(detail)
                default:
                    self = .database(detail)
                }
            }
        case is DecodingError, is RowDecodingError:
            self = .corrupt("\(what): \(error)")
        case is EncodingError:
            self = .invalid("\(what): \(error)")
        default:
            self = .database("\(what): \(error)")
        }
    }
}
