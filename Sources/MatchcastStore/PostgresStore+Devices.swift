import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    // MARK: Devices

    public func createDevice(_ device: DeviceRecord) async throws(StoreError) {
        let logger = self.logger
        let created = try await withConnection("creating a device") { connection in
            try await connection.query(
                """
                INSERT INTO device (id, secret_hash, created_at)
                VALUES (\(device.id), \(device.secretHash), \(device.createdAt.storedPrecision))
                ON CONFLICT (id) DO NOTHING RETURNING 1
                """,
                logger: logger
            ).count()
        }
        guard created > 0 else { throw .conflict("device '\(device.id)' exists") }
    }

    public func device(id: String) async throws(StoreError) -> DeviceRecord? {
        let logger = self.logger
        return try await withConnection("reading a device") { connection in
            try await connection.query(
                "SELECT id, secret_hash, created_at FROM device WHERE id = \(id)", logger: logger
            ).collect((String, String, Date).self).first.map { DeviceRecord(id: $0.0, secretHash: $0.1, createdAt: $0.2.readBack) }
        }
    }

    @discardableResult
    public func deleteDevice(id: String) async throws(StoreError) -> Bool {
        // Its token, follows and activities go with it (ON DELETE CASCADE).
        let logger = self.logger
        return try await withConnection("deleting a device") { connection in
            try await connection.query("DELETE FROM device WHERE id = \(id) RETURNING 1", logger: logger).count() > 0
        }
    }

    // MARK: Push-to-start tokens

    public func setPushToStartToken(_ record: PushToStartTokenRecord) async throws(StoreError) {
        let logger = self.logger
        // One statement, so one round trip and a transaction of its own. A token identifies one app install: if another
        // device claimed it, that claim is stale and goes first (the insert reads how many rows went, which runs the
        // delete before it: the token is unique). A device that is not there fails the insert's foreign key, and the
        // delete goes with it.
        try await writeForDevice(record.deviceId, "setting a push-to-start token") { connection in
            try await connection.query(
                """
                WITH stale AS (
                    DELETE FROM push_to_start_token WHERE token = \(record.token) AND device_id <> \(record.deviceId)
                    RETURNING 1
                )
                INSERT INTO push_to_start_token (device_id, token, environment, updated_at)
                SELECT \(record.deviceId), \(record.token), \(record.environment.rawValue), \(record.updatedAt.storedPrecision)
                FROM (SELECT count(*) FROM stale) AS gone
                ON CONFLICT (device_id) DO UPDATE SET
                    token = excluded.token, environment = excluded.environment, updated_at = excluded.updated_at
                """,
                logger: logger
            ).consume()
        }
    }

    public func pushToStartTokens(deviceIds: [String]) async throws(StoreError) -> [String: PushToStartTokenRecord] {
        guard !deviceIds.isEmpty else { return [:] }
        let logger = self.logger
        let rows = try await withConnection("reading \(deviceIds.count) push-to-start tokens") { connection in
            try await connection.query(
                "SELECT device_id, token, environment, updated_at FROM push_to_start_token WHERE device_id = ANY(\(deviceIds))",
                logger: logger
            ).collect((String, String, String, Date).self)
        }
        var found: [String: PushToStartTokenRecord] = [:]
        for row in rows {
            found[row.0] = PushToStartTokenRecord(
                deviceId: row.0, token: row.1, environment: try APNsEnvironment(column: row.2), updatedAt: row.3.readBack)
        }
        return found
    }

    public func pushToStartToken(deviceId: String) async throws(StoreError) -> PushToStartTokenRecord? {
        let logger = self.logger
        let row = try await withConnection("reading a push-to-start token") { connection in
            try await connection.query(
                "SELECT device_id, token, environment, updated_at FROM push_to_start_token WHERE device_id = \(deviceId)",
                logger: logger
            ).collect((String, String, String, Date).self).first
        }
        guard let row else { return nil }
        return PushToStartTokenRecord(
            deviceId: row.0, token: row.1, environment: try APNsEnvironment(column: row.2), updatedAt: row.3.readBack)
    }

    public func pushToStartTokenHolder(token: String) async throws(StoreError) -> String? {
        let logger = self.logger
        return try await withConnection("reading a push-to-start token's device") { connection in
            try await connection.query(
                "SELECT device_id FROM push_to_start_token WHERE token = \(token)", logger: logger
            ).collect(String.self).first
        }
    }

    public func removePushToStartToken(token: String) async throws(StoreError) -> String? {
        let logger = self.logger
        return try await withConnection("removing a push-to-start token") { connection in
            try await connection.query(
                "DELETE FROM push_to_start_token WHERE token = \(token) RETURNING device_id", logger: logger
            ).collect(String.self).first
        }
    }

    // MARK: Token refusals

    public func recordTokenRefusal(_ refusal: TokenRefusal) async throws(StoreError) {
        let logger = self.logger
        try await transaction("recording a token refusal") { connection in
            try await connection.query(
                """
                INSERT INTO token_refusal (device_id, kind, token, activity_id, reason, at)
                SELECT \(refusal.deviceId), \(refusal.kind.rawValue), \(refusal.token), \(refusal.activityId), \(refusal.reason),
                       \(refusal.at.storedPrecision)
                WHERE EXISTS (SELECT 1 FROM device WHERE id = \(refusal.deviceId))
                """,
                logger: logger
            ).consume()
            try await connection.query(
                """
                DELETE FROM token_refusal WHERE device_id = \(refusal.deviceId) AND id NOT IN (
                    SELECT id FROM token_refusal WHERE device_id = \(refusal.deviceId) ORDER BY at DESC, id DESC
                    LIMIT \(TokenRefusal.keptPerDevice))
                """,
                logger: logger
            ).consume()
        }
    }

    public func tokenRefusals(deviceId: String) async throws(StoreError) -> [TokenRefusal] {
        let logger = self.logger
        let rows = try await withConnection("reading token refusals") { connection in
            try await connection.query(
                """
                SELECT kind, token, activity_id, reason, at FROM token_refusal WHERE device_id = \(deviceId)
                ORDER BY at DESC, id DESC
                """,
                logger: logger
            ).collect((String, String, String?, String, Date).self)
        }
        var refusals: [TokenRefusal] = []
        for row in rows {
            guard let kind = TokenRefusal.Kind(rawValue: row.0) else {
                throw .corrupt("token refusal of device '\(deviceId)': unknown kind '\(row.0)'")
            }
            refusals.append(TokenRefusal(
                deviceId: deviceId, kind: kind, token: row.1, activityId: row.2, reason: row.3, at: row.4.readBack))
        }
        return refusals
    }

    // MARK: Update token sightings

    public func noteUpdateTokens(_ sightings: [UpdateTokenSighting], now: Date) async throws(StoreError) {
        guard !sightings.isEmpty else { return }
        let logger = self.logger
        let devices = PostgresTextArray(sightings.map(\.deviceId))
        let tokens = PostgresTextArray(sightings.map(\.token))
        let times = sightings.map(\.firstSeenAt.storedPrecision)
        let cutoff = UpdateTokenSighting.cutoff(at: now).storedPrecision
        try await transaction("noting update tokens") { connection in
            try await connection.query(
                """
                INSERT INTO update_token_sighting (device_id, token, first_seen_at)
                SELECT u.d, u.t, u.a FROM unnest(\(devices)::text[], \(tokens)::text[], \(times)::timestamptz[]) AS u(d, t, a)
                WHERE EXISTS (SELECT 1 FROM device WHERE id = u.d)
                ON CONFLICT (device_id, token) DO NOTHING
                """,
                logger: logger
            ).consume()
            try await connection.query(
                "DELETE FROM update_token_sighting WHERE first_seen_at < \(cutoff)", logger: logger
            ).consume()
        }
    }

    public func updateTokenSightings(deviceId: String) async throws(StoreError) -> [UpdateTokenSighting] {
        let logger = self.logger
        let rows = try await withConnection("reading update token sightings") { connection in
            try await connection.query(
                """
                SELECT token, first_seen_at FROM update_token_sighting WHERE device_id = \(deviceId)
                ORDER BY first_seen_at, token
                """,
                logger: logger
            ).collect((String, Date).self)
        }
        return rows.map { UpdateTokenSighting(deviceId: deviceId, token: $0.0, firstSeenAt: $0.1.readBack) }
    }

    // MARK: Helpers

    /// `withConnection` for one statement that writes a row of `deviceId`'s: the row's foreign key fails when the
    /// device is not there, and the call then says so in the other stores' words, not PostgreSQL's.
    func writeForDevice<T: Sendable>(
        _ deviceId: String, _ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        do {
            return try await withConnection(what, body)
        } catch where error == .notFound {
            throw .notFound("no device '\(deviceId)'")
        }
    }
}
