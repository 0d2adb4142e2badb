import Foundation
import MatchcastCore
import MatchcastStore
import Testing

/// A match's broadcast channel, open or closing, as `BroadcastChannels` keeps it.
private enum Channels {
    static func update(_ status: MatchStatus, _ home: Int) -> MatchUpdate {
        let rendered = try! MatchRenderer.render(StoreFixture.football(status, home, 0, clock: "9'"))
        return MatchUpdate(rendered: rendered, content: rendered.contentState, keyEvents: [], pollInterval: .seconds(5))
    }

    static func channel(_ matchId: String = "epl-mun-liv", id: String = "Y2gtMQ==") -> MatchChannel {
        MatchChannel(
            matchId: matchId, channelId: id, activityId: "act_ch_\(matchId)", current: update(.live, 0),
            now: StoreFixture.at(0), policy: StoreFixture.policy)
    }
}

@Suite("Store contract: broadcast channels")
struct ChannelContractTests {
    @Test(arguments: StoreKind.allCases)
    func channelsAreSavedReplacedListedAndDeleted(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let channels = try #require(store as? any ChannelStore, "every store of the contract keeps channels")
            #expect(try await channels.channels().isEmpty)
            #expect(try await channels.channel(matchId: "epl-mun-liv") == nil)

            let saved = StoreFixture.at(1)
            let first = MatchChannelRecord(channel: Channels.channel(), updatedAt: saved)
            let other = MatchChannelRecord(channel: Channels.channel("atp-final", id: "Y2gtMg=="), updatedAt: saved)
            try await channels.saveChannel(first)
            try await channels.saveChannel(other)
            #expect(try await channels.channel(matchId: "epl-mun-liv") == first)
            #expect(try await channels.channels().map(\.matchId) == ["atp-final", "epl-mun-liv"])

            // The match ends: the channel closes (end broadcast), waiting for its delete; replaced in place.
            var closing = first.channel
            _ = closing.matchChanged(
                Channels.update(.completed, 1), now: StoreFixture.at(60), policy: StoreFixture.policy,
                channels: ChannelPolicy(minFollowers: 1))
            #expect(closing.phase == .closing)
            let replaced = MatchChannelRecord(channel: closing, updatedAt: StoreFixture.at(61))
            try await channels.saveChannel(replaced)
            let read = try #require(try await channels.channel(matchId: "epl-mun-liv"))
            #expect(read == replaced)
            #expect(read.channel.phase == .closing && read.channel.deleteAt != nil)
            #expect(read.channel.activity.lastTimestamp == closing.activity.lastTimestamp)

            #expect(try await channels.deleteChannel(matchId: "epl-mun-liv"))
            #expect(try await !channels.deleteChannel(matchId: "epl-mun-liv"))
            #expect(try await channels.channels().map(\.matchId) == ["atp-final"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordWithoutIdsIsRefused(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let channels = try #require(store as? any ChannelStore)
            let empty = MatchChannelRecord(channel: Channels.channel(id: ""), updatedAt: StoreFixture.at(0))
            await #expect(throws: StoreError.self) { try await channels.saveChannel(empty) }
            #expect(try await channels.channels().isEmpty)
        }
    }
}
