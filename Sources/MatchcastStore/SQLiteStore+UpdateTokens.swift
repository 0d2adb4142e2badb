import MatchcastCore
internal import GRDB

extension SQLiteStore {
    /// The indexed key of an update token (schema v7, `activity.tokenKey`): its `SQLiteTextKey`. An entry a fraction
    /// of the token's size keeps a registration to one narrow index page.
    static func tokenKey(_ token: String) -> Int64 {
        SQLiteTextKey.of(token)
    }

    /// The same key for a token as kept, hashed from its digits (no string made for a hex token).
    static func tokenKey(_ token: CompactToken) -> Int64 {
        token.withUTF8(SQLiteTextKey.of(utf8:))
    }

    /// A condition on `activity`'s columns (or `activityView`'s): it holds the token bound at `token`, whose key is
    /// bound at `key`. The key finds the rows; the token rules out another token of the same key.
    static func holdsToken(token: String, key: String) -> String {
        "tokenKey = \(key) AND updateToken = \(token)"
    }

    public func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        guard !updateTokens.isEmpty else { return [:] }
        let asked = Set(updateTokens)
        let keys = "[" + Set(updateTokens.map(Self.tokenKey)).map(String.init).joined(separator: ",") + "]"
        return try await read("finding the holders of \(updateTokens.count) update tokens") { db in
            var holders: [String: String] = [:]
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT a.updateToken, a.id FROM json_each(?) AS k CROSS JOIN activity AS a ON a.tokenKey = k.value
                    WHERE a.phase <> 'ended'
                    """),
                arguments: [keys])
            for row in rows {
                let token: String = row[0]
                if asked.contains(token) { holders[token] = row[1] as String }
            }
            return holders
        }
    }
}
