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
    /// A record from the columns of `SQLiteStore.activityColumns`, in that order.
    init(row: Row, contents: LoadedContents) throws {
        let id: String = try row.decode(atIndex: 0)
        let matchId: String = try row.decode(atIndex: 2)
        guard let phase = ActivityLifecycle.Phase(rawValue: try row.decode(atIndex: 4)) else {
            throw StoreError.corrupt("stored activity '\(id)' has an unknown phase")
        }
        let stored = ActivityLifecycle.Stored(
            phase: phase, updateToken: try row.decode(atIndex: 5), lastTimestamp: try row.decode(atIndex: 6),
            sent: try contents.box(row.decode(atIndex: 7), of: id), sentAt: try row.decode(atIndex: 8),
            sentStaleDate: try row.decode(atIndex: 9), startedAt: try row.decode(atIndex: 10),
            held: try contents.box(row.decode(atIndex: 11), of: id), heldStaleness: try row.decode(atIndex: 12),
            endHeld: try row.decode(atIndex: 13), final: try contents.box(row.decode(atIndex: 14), of: id),
            channelId: try row.decode(atIndex: 15))
        self.init(
            activityId: id,
            deviceId: try row.decode(atIndex: 1),
            matchId: matchId,
            environment: try APNsEnvironment(column: row.decode(atIndex: 3)),
            lifecycle: ActivityLifecycle(activityId: id, matchId: matchId, stored: stored),
            updatedAt: try row.decode(atIndex: 16))
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
