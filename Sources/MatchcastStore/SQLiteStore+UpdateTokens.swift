internal import GRDB

extension SQLiteStore {
    /// The indexed key of an update token (schema v7, `activity_on_tokenKey`): its first 16 hex digits. Tokens are
    /// random, so 64 bits find one row; an entry a fraction of the token's size keeps a registration to one narrow
    /// index page.
    static func tokenKey(_ token: String) -> String { "substr(\(token), 1, 16)" }

    /// A condition: `column` holds the token `value` (an expression), found through the key's index. The `+` keeps
    /// SQLite from substituting `value` for `column` in the key's expression (constant propagation), which would
    /// leave it no index to search.
    static func holdsToken(_ column: String, _ value: String) -> String {
        "\(tokenKey(column)) = \(tokenKey(value)) AND +\(column) = \(value)"
    }

    public func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        guard !updateTokens.isEmpty else { return [:] }
        let list = Self.jsonArray(updateTokens)
        return try await read("finding the holders of \(updateTokens.count) update tokens") { db in
            var holders: [String: String] = [:]
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT a.updateToken, a.id FROM json_each(?) AS t CROSS JOIN activity AS a
                    ON \(Self.holdsToken("a.updateToken", "t.value"))
                    WHERE a.phase <> 'ended'
                    """),
                arguments: [list])
            for row in rows {
                holders[row[0]] = row[1] as String
            }
            return holders
        }
    }
}
