import Foundation
import MatchcastCore
internal import GRDB

// Records read back from rows. Decoding throws (never traps) so a damaged row is a `.corrupt`
// error for that call, not a crash.

extension DeviceRecord {
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"),
            secretHash: try row.decode(forColumn: "secretHash"),
            createdAt: try row.decode(forColumn: "createdAt"))
    }
}

extension PushToStartTokenRecord {
    init(row: Row) throws {
        self.init(
            deviceId: try row.decode(forColumn: "deviceId"),
            token: try row.decode(forColumn: "token"),
            environment: try APNsEnvironment(column: row.decode(forColumn: "environment")),
            updatedAt: try row.decode(forColumn: "updatedAt"))
    }
}

extension FollowRecord {
    init(row: Row) throws {
        self.init(
            deviceId: try row.decode(forColumn: "deviceId"),
            matchId: try row.decode(forColumn: "matchId"),
            createdAt: try row.decode(forColumn: "createdAt"))
    }
}

extension ActivityRecord {
    init(row: Row) throws {
        let id: String = try row.decode(forColumn: "id")
        let lifecycle = try JSONColumn.decode(
            ActivityLifecycle.self, from: row.decode(forColumn: "lifecycle"), "lifecycle of activity '\(id)'")
        self.init(
            activityId: id,
            deviceId: try row.decode(forColumn: "deviceId"),
            matchId: try row.decode(forColumn: "matchId"),
            environment: try APNsEnvironment(column: row.decode(forColumn: "environment")),
            lifecycle: lifecycle,
            updatedAt: try row.decode(forColumn: "updatedAt"))
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored activity '\(id)': \(error.message)")
        }
    }
}

extension MatchRecord {
    init(row: Row) throws {
        let id: String = try row.decode(forColumn: "matchId")
        let snapshot = try JSONColumn.decode(MatchSnapshot.self, from: row.decode(forColumn: "snapshot"), "snapshot of match '\(id)'")
        self.init(matchId: id, snapshot: snapshot, updatedAt: try row.decode(forColumn: "updatedAt"))
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored match '\(id)': \(error.message)")
        }
    }
}

extension APNsEnvironment {
    init(column: String) throws(StoreError) {
        guard let environment = APNsEnvironment(rawValue: column) else {
            throw .corrupt("unknown APNs environment '\(column.prefix(20))'")
        }
        self = environment
    }
}
