import Foundation
internal import GRDB

extension SQLiteStore {
    // MARK: Devices

    public func createDevice(_ device: DeviceRecord) async throws(StoreError) {
        try await write("creating a device") { db in
            guard try !Self.deviceExists(device.id, db) else { throw StoreError.conflict("device '\(device.id)' exists") }
            try db.cachedStatement(sql: "INSERT INTO device (id, secretHash, createdAt) VALUES (?, ?, ?)")
                .execute(arguments: [device.id, device.secretHash, SQLiteDateText.text(device.createdAt)])
        }
    }

    public func device(id: String) async throws(StoreError) -> DeviceRecord? {
        try await read("reading a device") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM device WHERE id = ?"),
                arguments: [id]).map(DeviceRecord.init(row:))
        }
    }

    @discardableResult
    public func deleteDevice(id: String) async throws(StoreError) -> Bool {
        // Its token, follows and activities go with it (ON DELETE CASCADE).
        try await write("deleting a device") { db in
            try db.cachedStatement(sql: "DELETE FROM device WHERE id = ?").execute(arguments: [id])
            return db.changesCount > 0
        }
    }

    // MARK: Push-to-start tokens

    public func setPushToStartToken(_ record: PushToStartTokenRecord) async throws(StoreError) {
        try await write("setting a push-to-start token") { db in
            try Self.requireDevice(record.deviceId, db)
            // A token identifies one app install: if another device claimed it, that claim is stale.
            try db.cachedStatement(sql: "DELETE FROM pushToStartToken WHERE token = ? AND deviceId <> ?")
                .execute(arguments: [record.token, record.deviceId])
            try db.cachedStatement(sql: """
                    INSERT INTO pushToStartToken (deviceId, token, environment, updatedAt) VALUES (?, ?, ?, ?)
                    ON CONFLICT (deviceId) DO UPDATE SET
                        token = excluded.token, environment = excluded.environment, updatedAt = excluded.updatedAt
                    """).execute(arguments: [record.deviceId, record.token, record.environment.rawValue, SQLiteDateText.text(record.updatedAt)])
        }
    }

    public func pushToStartToken(deviceId: String) async throws(StoreError) -> PushToStartTokenRecord? {
        try await read("reading a push-to-start token") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM pushToStartToken WHERE deviceId = ?"),
                arguments: [deviceId])
                .map(PushToStartTokenRecord.init(row:))
        }
    }

    public func pushToStartTokens(deviceIds: [String]) async throws(StoreError) -> [String: PushToStartTokenRecord] {
        guard !deviceIds.isEmpty else { return [:] }
        let list = Self.jsonArray(deviceIds)
        return try await read("reading \(deviceIds.count) push-to-start tokens") { db in
            var found: [String: PushToStartTokenRecord] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM pushToStartToken WHERE deviceId IN (SELECT value FROM json_each(?))"),
                    arguments: [list]) {
                let record = try PushToStartTokenRecord(row: row)
                found[record.deviceId] = record
            }
            return found
        }
    }

    public func pushToStartTokenHolder(token: String) async throws(StoreError) -> String? {
        try await read("reading a push-to-start token's device") { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT deviceId FROM pushToStartToken WHERE token = ?"), arguments: [token])
        }
    }

    public func removePushToStartToken(token: String) async throws(StoreError) -> String? {
        try await write("removing a push-to-start token") { db in
            guard let deviceId = try String.fetchOne(
                db.cachedStatement(sql: "SELECT deviceId FROM pushToStartToken WHERE token = ?"), arguments: [token])
            else { return nil }
            try db.cachedStatement(sql: "DELETE FROM pushToStartToken WHERE deviceId = ?")
                .execute(arguments: [deviceId])
            return deviceId
        }
    }

    // MARK: Token refusals

    public func recordTokenRefusal(_ refusal: TokenRefusal) async throws(StoreError) {
        try await write("recording a token refusal") { db in
            try db.cachedStatement(sql: """
                INSERT INTO tokenRefusal (deviceId, kind, token, activityId, reason, at)
                SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM device WHERE id = ?)
                """).execute(arguments: [
                    refusal.deviceId, refusal.kind.rawValue, refusal.token, refusal.activityId, refusal.reason, refusal.at,
                    refusal.deviceId,
                ])
            try db.cachedStatement(sql: """
                DELETE FROM tokenRefusal WHERE deviceId = ? AND id NOT IN (
                    SELECT id FROM tokenRefusal WHERE deviceId = ? ORDER BY at DESC, id DESC LIMIT ?)
                """).execute(arguments: [refusal.deviceId, refusal.deviceId, TokenRefusal.keptPerDevice])
        }
    }

    public func tokenRefusals(deviceId: String) async throws(StoreError) -> [TokenRefusal] {
        try await read("reading token refusals") { db in
            try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT kind, token, activityId, reason, at FROM tokenRefusal WHERE deviceId = ? ORDER BY at DESC, id DESC
                    """),
                arguments: [deviceId]
            ).map { row in
                let kind: String = try row.decode(forColumn: "kind")
                guard let known = TokenRefusal.Kind(rawValue: kind) else {
                    throw StoreError.corrupt("token refusal of device '\(deviceId)': unknown kind '\(kind)'")
                }
                return TokenRefusal(
                    deviceId: deviceId, kind: known, token: try row.decode(forColumn: "token"),
                    activityId: try row.decode(forColumn: "activityId"), reason: try row.decode(forColumn: "reason"),
                    at: try row.decode(forColumn: "at"))
            }
        }
    }

    // MARK: Update token sightings

    public func noteUpdateTokens(_ sightings: [UpdateTokenSighting], now: Date) async throws(StoreError) {
        guard !sightings.isEmpty else { return }
        try await write("noting update tokens") { db in
            let insert = try db.cachedStatement(sql: """
                INSERT INTO updateTokenSighting (deviceId, token, firstSeenAt)
                SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM device WHERE id = ?1)
                ON CONFLICT (deviceId, token) DO NOTHING
                """)
            for sighting in sightings {
                try insert.execute(arguments: [sighting.deviceId, sighting.token, SQLiteDateText.text(sighting.firstSeenAt)])
            }
            try db.cachedStatement(sql: "DELETE FROM updateTokenSighting WHERE firstSeenAt < ?")
                .execute(arguments: [SQLiteDateText.text(UpdateTokenSighting.cutoff(at: now))])
        }
    }

    public func updateTokenSightings(deviceId: String) async throws(StoreError) -> [UpdateTokenSighting] {
        try await read("reading update token sightings") { db in
            try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT token, firstSeenAt FROM updateTokenSighting WHERE deviceId = ? ORDER BY firstSeenAt, token
                    """),
                arguments: [deviceId]
            ).map { row in
                UpdateTokenSighting(deviceId: deviceId, token: try row.decode(atIndex: 0), firstSeenAt: try row.decode(atIndex: 1))
            }
        }
    }

    // MARK: Helpers

    static func deviceExists(_ id: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM device WHERE id = ?)"),
            arguments: [id]) ?? false
    }

    /// Checked before writing so the error names the device; the foreign key stays as a backstop.
    static func requireDevice(_ id: String, _ db: Database) throws {
        guard try deviceExists(id, db) else { throw StoreError.notFound("no device '\(id)'") }
    }
}
