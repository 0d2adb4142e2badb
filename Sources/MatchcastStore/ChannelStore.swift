import Foundation
import MatchcastCore

/// A match's broadcast channel as stored: the channel's state machine (with its synthetic
/// activity) and when it was saved. One per match at most; kept until APNs has deleted the channel,
/// so a channel is never forgotten while it still exists (and counts against Apple's 10,000).
public struct MatchChannelRecord: Sendable, Hashable, Codable {
    public var channel: MatchChannel
    public var updatedAt: Date

    public init(channel: MatchChannel, updatedAt: Date) {
        self.channel = channel
        self.updatedAt = updatedAt
    }

    public var matchId: String { channel.matchId }
    public var channelId: String { channel.channelId }

    /// Throws when the record cannot be stored.
    func validate() throws(StoreError) {
        guard !channel.matchId.isEmpty, !channel.channelId.isEmpty else {
            throw .invalid("broadcast channel record with an empty match or channel id")
        }
    }
}

extension MatchChannelRecord {
    /// A record from a row of SQLite or PostgreSQL: `matchId, state` (the channel as JSON), `updatedAt`.
    init(column row: (String, String, Date)) throws(StoreError) {
        let channel = try JSONColumn.decode(MatchChannel.self, from: row.1, "broadcast channel of match '\(row.0)'")
        guard channel.matchId == row.0 else {
            throw .corrupt("stored broadcast channel of match '\(row.0)' holds match '\(channel.matchId)'")
        }
        self.init(channel: channel, updatedAt: row.2)
    }
}

/// Where broadcast channels (iOS 18) are kept across restarts: SQLite (`v3`), PostgreSQL (`v4`) and in
/// memory. Separate from `MatchcastStore` so stores that have no use for channels (the benchmark's, test
/// doubles) need not carry them; a broker with channel mode on needs its store to be one.
public protocol ChannelStore: Sendable {
    /// Inserts or replaces the match's channel.
    func saveChannel(_ record: MatchChannelRecord) async throws(StoreError)
    /// The match's channel, if it has one not yet deleted.
    func channel(matchId: String) async throws(StoreError) -> MatchChannelRecord?
    /// Every channel not yet deleted, sorted by match id: what a restart resumes.
    func channels() async throws(StoreError) -> [MatchChannelRecord]
    /// Forgets the match's channel once APNs deleted it; false when there was none.
    @discardableResult
    func deleteChannel(matchId: String) async throws(StoreError) -> Bool
}
