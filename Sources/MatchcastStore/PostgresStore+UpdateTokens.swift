import PostgresNIO

extension PostgresStore {
    public func openHolders(updateTokens: [String]) async throws(StoreError) -> [String: String] {
        guard !updateTokens.isEmpty else { return [:] }
        let logger = self.logger
        let rows = try await withConnection("finding the holders of \(updateTokens.count) update tokens") { connection in
            try await connection.query(
                "SELECT update_token, id FROM activity WHERE open AND update_token = ANY(\(updateTokens))", logger: logger
            ).collect((String, String).self)
        }
        var holders: [String: String] = [:]
        for (token, id) in rows { holders[token] = id }
        return holders
    }
}
