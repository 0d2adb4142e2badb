import Foundation
import MatchcastCore
import PostgresNIO

// What replicas share beyond the plain store: fenced writes, one match's outbox, the matches that need an owner,
// and the command inbox with its `NOTIFY` (the channel is per schema, so brokers in other schemas of the same
// database are not woken).

extension PostgresStore: ReplicaStore {
    public func saveActivities(
        _ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence, share: FanOutShare?,
        match: MatchRecord?
    ) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, fence: Optional(fence), share: share, match: match)
    }

    /// Takes the fence's lease rows for share and throws `.leaseLost` unless each is the fence's owner and generation.
    static func checkFence(_ fence: LeaseFence, _ connection: PostgresConnection, logger: Logger) async throws {
        let matchIds = fence.generations.keys.sorted()
        guard !matchIds.isEmpty else { return }
        let rows = try await connection.query(
            """
            SELECT match_id, owner, generation FROM match_lease
            WHERE match_id = ANY(\(matchIds)) ORDER BY match_id FOR SHARE
            """,
            logger: logger
        ).collect((String, String, Int).self)
        var held: [String: (String, Int)] = [:]
        for (matchId, owner, generation) in rows { held[matchId] = (owner, generation) }
        for matchId in matchIds {
            guard let (owner, generation) = held[matchId], owner == fence.owner,
                  generation == fence.generations[matchId] else {
                throw StoreError.leaseLost("match '\(matchId)' is no longer leased to '\(fence.owner)'")
            }
        }
    }

    public func queuedDeliveries(matchId: String) async throws(StoreError) -> [Delivery] {
        try await queuedDeliveries("reading the queued deliveries of match '\(matchId)'", .matchId(matchId))
    }

    public func matchesNeedingOwner() async throws(StoreError) -> [String] {
        let logger = self.logger
        let over = [MatchStatus.completed, .abandoned].map(\.rawValue)
        return try await withConnection("listing the matches that need a replica") { connection in
            try await connection.query(
                """
                SELECT f.match_id FROM (SELECT DISTINCT match_id FROM follow) AS f
                LEFT JOIN match_state AS m ON m.match_id = f.match_id
                WHERE m.match_id IS NULL OR NOT ((m.snapshot::jsonb ->> 'status') = ANY(\(over)))
                UNION
                SELECT DISTINCT match_id FROM activity WHERE open
                UNION
                SELECT DISTINCT match_id FROM outbox WHERE match_id <> ''
                UNION
                SELECT DISTINCT match_id FROM outbox_chunk
                UNION
                SELECT match_id FROM match_channel
                ORDER BY 1
                """,
                logger: logger
            ).collect(String.self)
        }
    }

    // MARK: Commands

    /// The `NOTIFY` channel of this store's schema: posted commands and released leases.
    var replicaChannel: String {
        "matchcast_commands" + (configuration.schema.map { "_" + $0 } ?? "")
    }

    public func postCommand(_ command: MatchCommand) async throws(StoreError) -> Int64 {
        let body: String
        do {
            body = String(decoding: try JSONEncoder().encode(command), as: UTF8.self)
        } catch {
            throw .invalid("command for match '\(command.matchId)' cannot be encoded: \(error)")
        }
        let logger = self.logger
        let channel = replicaChannel
        let signal = ReplicaSignal.commandPosted(matchId: command.matchId).payload
        return try await transaction("posting a \(command.kind.rawValue) command for match '\(command.matchId)'") { connection -> Int64 in
            let ids: [Int64] = try await connection.query(
                "INSERT INTO match_command (match_id, command) VALUES (\(command.matchId), \(body)) RETURNING id",
                logger: logger
            ).collect(Int64.self)
            let id: Int64 = ids.first ?? 0
            // Delivered when the transaction commits, so the owner always finds the row it is woken for.
            try await connection.query("SELECT pg_notify(\(channel), \(signal))", logger: logger).consume()
            return id
        }
    }

    public func pendingCommands(matchIds: [String]) async throws(StoreError) -> [PostedCommand] {
        guard !matchIds.isEmpty else { return [] }
        let logger = self.logger
        let rows = try await withConnection("reading pending commands") { connection in
            try await connection.query(
                """
                SELECT id, command FROM match_command
                WHERE done_at IS NULL AND match_id = ANY(\(matchIds)) ORDER BY id
                """,
                logger: logger
            ).collect((Int64, String).self)
        }
        var commands: [PostedCommand] = []
        for (id, body) in rows {
            do {
                commands.append(PostedCommand(id: id, command: try JSONDecoder().decode(MatchCommand.self, from: Data(body.utf8))))
            } catch {
                throw .corrupt("stored command \(id): \(error)")
            }
        }
        return commands
    }

    public func completeCommand(id: Int64, refusal: CommandRefusal?) async throws(StoreError) {
        let logger = self.logger
        try await withConnection("completing command \(id)") { connection in
            try await connection.query(
                """
                UPDATE match_command SET done_at = now(), refusal_code = \(refusal?.code), refusal_message = \(refusal?.message)
                WHERE id = \(id) AND done_at IS NULL
                """,
                logger: logger
            ).consume()
        }
    }

    public func commandOutcome(id: Int64) async throws(StoreError) -> CommandOutcome? {
        let logger = self.logger
        let row = try await withConnection("reading command \(id)") { connection in
            try await connection.query(
                "SELECT refusal_code, refusal_message FROM match_command WHERE id = \(id) AND done_at IS NOT NULL",
                logger: logger
            ).collect((String?, String?).self).first
        }
        guard let (code, message) = row else { return nil }
        guard let code else { return CommandOutcome(refusal: nil) }
        return CommandOutcome(refusal: CommandRefusal(code: code, message: message ?? ""))
    }

    public func forgetCommand(id: Int64) async throws(StoreError) {
        let logger = self.logger
        try await withConnection("forgetting command \(id)") { connection in
            try await connection.query("DELETE FROM match_command WHERE id = \(id)", logger: logger).consume()
        }
    }

    public func forgetCommands(postedBefore age: Duration) async throws(StoreError) {
        let logger = self.logger
        let seconds = age.seconds
        try await withConnection("forgetting old commands") { connection in
            try await connection.query(
                "DELETE FROM match_command WHERE posted_at < now() - \(seconds) * interval '1 second'", logger: logger
            ).consume()
        }
    }

    public func listen(_ onSignal: @escaping @Sendable (ReplicaSignal) -> Void) async throws {
        let channel = replicaChannel
        // Through `withConnection`: the same pool, the same fast failure while the server is away.
        try await withConnection("listening for other replicas") { connection in
            try await connection.listen(on: channel) { notifications in
                for try await notification in notifications { onSignal(ReplicaSignal(payload: notification.payload)) }
            }
        }
    }
}
