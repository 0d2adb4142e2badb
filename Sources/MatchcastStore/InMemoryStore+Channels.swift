import Foundation
import MatchcastCore

extension InMemoryStore: ChannelStore {
    public func saveChannel(_ record: MatchChannelRecord) throws(StoreError) {
        try record.validate()
        channelsByMatch[record.matchId] = record
    }

    public func channel(matchId: String) -> MatchChannelRecord? { channelsByMatch[matchId] }

    public func channels() -> [MatchChannelRecord] {
        channelsByMatch.keys.sorted().compactMap { channelsByMatch[$0] }
    }

    @discardableResult
    public func deleteChannel(matchId: String) -> Bool {
        channelsByMatch.removeValue(forKey: matchId) != nil
    }
}
