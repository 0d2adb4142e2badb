internal import GRDB

extension SQLiteStore {
    public func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        guard !updateTokens.isEmpty else { return [:] }
        let list = Self.jsonArray(updateTokens)
        return try await read("finding the holders of \(updateTokens.count) update tokens") { db in
            var holders: [String: String] = [:]
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT updateToken, id FROM activity
                    WHERE updateToken IN (SELECT value FROM json_each(?)) AND phase <> 'ended'
                    """),
                arguments: [list])
            for row in rows {
                holders[row[0]] = row[1] as String
            }
            return holders
        }
    }
}
