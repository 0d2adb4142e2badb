import Foundation
import MatchcastCore
internal import GRDB
internal import GRDBSQLite

/// A cached GRDB statement run with values bound (and read) straight through SQLite's C API: for a statement run
/// once per activity of a fan-out, where building GRDB's `StatementArguments` (an array of boxed values) for each row
/// costs more than the row's SQL, and for reading 100,000 activities, where GRDB's `Row` decoding did. Used on the
/// queue of the connection that made it, inside one access.
///
/// Making one resets the cached statement: never make one while a cursor on the same SQL is still being read.
struct SQLiteRawStatement {
    private let statement: Statement
    private let handle: OpaquePointer
    private let connection: OpaquePointer

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the database connection is closed", sql: sql)
        }
        self.connection = connection
        // A cached statement starts from its first row, whatever the last use left.
        sqlite3_reset(handle)
    }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else { return bindNull(index) }
        value.withUTF8 { bindText(index, $0) }
    }

    /// A token's text, written from its digits as kept (no string made for a hex token).
    func bind(_ index: Int32, _ value: CompactToken?) {
        guard let value else { return bindNull(index) }
        value.withUTF8 { bindText(index, $0) }
    }

    private func bindText(_ index: Int32, _ text: UnsafeBufferPointer<UInt8>) {
        _ = sqlite3_bind_text(handle, index, text.baseAddress, Int32(text.count), Self.transient)
    }

    func bind(_ index: Int32, _ value: Int?) {
        guard let value else { return bindNull(index) }
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    func bind(_ index: Int32, _ value: Int64?) {
        guard let value else { return bindNull(index) }
        sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: Bool) {
        sqlite3_bind_int64(handle, index, value ? 1 : 0)
    }

    /// Bytes as a blob.
    func bind(_ index: Int32, _ value: Data) {
        value.withUnsafeBytes { bindBlob(index, $0) }
    }

    /// Bytes as a blob.
    func bind(_ index: Int32, bytes value: [UInt8]) {
        value.withUnsafeBytes { bindBlob(index, $0) }
    }

    private func bindBlob(_ index: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            // A blob of no bytes is still a blob, not NULL (which a null pointer would bind).
            sqlite3_bind_zeroblob(handle, index, 0)
            return
        }
        _ = sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
    }

    private func bindNull(_ index: Int32) {
        sqlite3_bind_null(handle, index)
    }

    /// Runs the statement once with the values bound; the number of rows it changed. A failure is GRDB's
    /// `DatabaseError`, with SQLite's extended code and message, as GRDB's own `execute` throws it.
    @discardableResult
    func run() throws -> Int {
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let extended = sqlite3_extended_errcode(connection)
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: message, sql: statement.sql)
        }
        sqlite3_reset(handle)
        return Int(sqlite3_changes(connection))
    }

    /// A query's next row: true when there is one to read with `text(_:)` and `int64(_:)`, false at the end (the
    /// statement is then reset). Arguments set through GRDB (`bind(_:)`) stay bound.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            sqlite3_reset(handle)
            return false
        default:
            let extended = sqlite3_extended_errcode(connection)
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: message, sql: statement.sql)
        }
    }

    /// Every row of a query, each read by `body`; the statement is reset after the last, or when `body` throws.
    func forEach(_ body: () throws -> Void) throws {
        do {
            while try step() { try body() }
        } catch {
            sqlite3_reset(handle)
            throw error
        }
    }

    /// A query's first row, read by `read` (nil when there is none); the statement is reset after it.
    func first<T>(_ read: () throws -> T) throws -> T? {
        guard try step() else { return nil }
        defer { sqlite3_reset(handle) }
        return try read()
    }

    /// Ends a query early (a row that could not be read), so the cached statement can run again.
    func reset() {
        sqlite3_reset(handle)
    }

    /// Binds GRDB arguments (a query's, bound once).
    func bind(_ arguments: StatementArguments) throws {
        try statement.setArguments(arguments)
    }

    /// The current row's text in `column`: nil for NULL; a value of another type is `.corrupt`, naming `what`.
    func text(_ column: Int32, _ what: @autoclosure () -> String) throws(StoreError) -> String? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL:
            return nil
        case SQLITE_TEXT:
            let bytes = sqlite3_column_text(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        default:
            throw .corrupt("\(what()) is not text")
        }
    }

    /// The current row's integer in `column`: nil for NULL; a value of another type is `.corrupt`, naming `what`.
    func integer(_ column: Int32, _ what: @autoclosure () -> String) throws(StoreError) -> Int64? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return nil
        case SQLITE_INTEGER: return sqlite3_column_int64(handle, column)
        default: throw .corrupt("\(what()) is not an integer")
        }
    }

    /// The current row's blob in `column`, as `Data`: nil for NULL; a value of another type is `.corrupt`.
    func data(_ column: Int32, _ what: @autoclosure () -> String) throws(StoreError) -> Data? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL:
            return nil
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
            return Data(bytes: bytes, count: count)
        default:
            throw .corrupt("\(what()) is not a blob")
        }
    }

    /// SQLite copies the text it is given before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
