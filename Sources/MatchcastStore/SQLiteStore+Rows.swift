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

/// One row of `SQLiteStore.activityColumns`, read straight from SQLite (`SQLiteRawStatement`): its content ids are
/// resolved once every row has been read, with the contents they name loaded in one query.
struct ActivityRow {
    var id: String
    var deviceId: String
    var matchId: String
    var environment: String
    var phase: String
    var updateToken: String?
    var lastTimestamp: Int64
    var sent: Int64?
    var sentAt: Int64?
    var sentStaleDate: Int64?
    var startedAt: Int64?
    var held: Int64?
    var heldStaleness: Int64?
    var endHeld: Bool
    var final: Int64?
    var channelId: String?
    var updatedAt: Date

    /// The statement's current row. Update dates are parsed once per distinct text (a fan-out gives thousands of
    /// activities one), through `dates`.
    init(_ statement: SQLiteRawStatement, dates: inout [String: Date]) throws(StoreError) {
        let id = try statement.text(0, "a stored activity's id")
        guard let id else { throw .corrupt("a stored activity has no id") }
        func name() -> String { "stored activity '\(id)'" }
        func text(_ column: Int32, _ field: String) throws(StoreError) -> String? {
            try statement.text(column, "the \(field) of \(name())")
        }
        func integer(_ column: Int32, _ field: String) throws(StoreError) -> Int64? {
            try statement.integer(column, "the \(field) of \(name())")
        }
        func required<T>(_ value: T?, _ field: String) throws(StoreError) -> T {
            guard let value else { throw .corrupt("\(name()) has no \(field)") }
            return value
        }
        self.id = id
        deviceId = try required(text(1, "device"), "device")
        matchId = try required(text(2, "match"), "match")
        environment = try required(text(3, "environment"), "environment")
        phase = try required(text(4, "phase"), "phase")
        updateToken = try text(5, "update token")
        lastTimestamp = try required(integer(6, "last timestamp"), "last timestamp")
        sent = try integer(7, "sent content")
        sentAt = try integer(8, "sent date")
        sentStaleDate = try integer(9, "stale date")
        startedAt = try integer(10, "start date")
        held = try integer(11, "held content")
        heldStaleness = try integer(12, "held staleness")
        endHeld = try required(integer(13, "end-held flag"), "end-held flag") != 0
        final = try integer(14, "final content")
        channelId = try text(15, "channel")
        let dateText = try required(text(16, "update date"), "update date")
        if let date = dates[dateText] {
            updatedAt = date
        } else {
            guard let date = Date.fromDatabaseValue(dateText.databaseValue) else {
                throw .corrupt("\(name()) has an unreadable update date")
            }
            dates[dateText] = date
            updatedAt = date
        }
    }

    /// The content rows the activity refers to.
    var contentIds: [Int64] { [sent, held, final].compactMap { $0 } }
}

extension ActivityRecord {
    /// The record a row holds, its contents taken from `contents`.
    init(_ row: ActivityRow, contents: LoadedContents) throws(StoreError) {
        guard let phase = ActivityLifecycle.Phase(rawValue: row.phase) else {
            throw StoreError.corrupt("stored activity '\(row.id)' has an unknown phase")
        }
        let stored = ActivityLifecycle.Stored(
            phase: phase, updateToken: row.updateToken.map { CompactToken($0) }, lastTimestamp: Int(row.lastTimestamp),
            sent: try contents.box(row.sent, of: row.id), sentAt: row.sentAt.map(Int.init),
            sentStaleDate: row.sentStaleDate.map(Int.init), startedAt: row.startedAt.map(Int.init),
            held: try contents.box(row.held, of: row.id), heldStaleness: row.heldStaleness,
            endHeld: row.endHeld, final: try contents.box(row.final, of: row.id), channelId: row.channelId)
        self.init(
            deviceId: row.deviceId,
            environment: try APNsEnvironment(column: row.environment),
            lifecycle: ActivityLifecycle(activityId: row.id, matchId: row.matchId, stored: stored),
            updatedAt: row.updatedAt)
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored activity '\(row.id)': \(error.message)")
        }
    }
}

extension MatchRecord {
    init(row: Row) throws {
        let id: String = try row.decode(forColumn: "matchId")
        let snapshot = try JSONColumn.decode(MatchSnapshot.self, from: row.decode(forColumn: "snapshot"), "snapshot of match '\(id)'")
        let sends = try SQLiteStore.sends(column: row.decode(forColumn: "highPrioritySends"), matchId: id)
        self.init(matchId: id, snapshot: snapshot, updatedAt: try row.decode(forColumn: "updatedAt"), highPrioritySends: sends)
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
