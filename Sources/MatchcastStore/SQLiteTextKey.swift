import Crypto
internal import GRDB

/// The indexed key of a long text a SQLite table looks up by value: the first 64 bits of its SHA-256, so that the
/// index holds eight bytes per row, not the text. A hash, not a prefix, so that no client can crowd one key with texts
/// of its making and make every lookup of it a scan. A key finds the rows; the text itself, compared in the same
/// statement, tells apart two texts that share one.
///
/// Kept on disk (update tokens from schema v7, contents from v13): the function must never change.
enum SQLiteTextKey {
    static func of(_ text: String) -> Int64 {
        var text = text
        return text.withUTF8(of(utf8:))
    }

    /// Runs `sql`, in which `matchcast_text_key(text)` is the key of `text` (null for null): a migration fills a key
    /// column in one statement.
    static func execute(_ sql: String, _ db: Database) throws {
        let function = DatabaseFunction("matchcast_text_key", argumentCount: 1, pure: true) { values in
            String.fromDatabaseValue(values[0]).map(of)
        }
        db.add(function: function)
        defer { db.remove(function: function) }
        try db.execute(sql: sql)
    }

    static func of(utf8: UnsafeBufferPointer<UInt8>) -> Int64 {
        let digest = SHA256.hash(data: UnsafeRawBufferPointer(utf8))
        return digest.withUnsafeBytes { bytes in
            bytes.prefix(8).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        }
    }
}
