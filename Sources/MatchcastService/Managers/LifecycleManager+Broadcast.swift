import MatchcastCore

extension LifecycleManager {
    /// Turns broadcast channel mode on (before `restore` and before any update): matches that meet
    /// `channels`' rule get a channel, and its broadcasts join the lifecycle's operations.
    public func useBroadcastChannels(_ channels: BroadcastChannels) {
        broadcast = channels
    }

    /// The match's open broadcast channel, if channel mode is on and it has one.
    public func broadcastChannelId(matchId: String) async -> String? {
        await broadcast?.channelId(matchId: matchId)
    }
}
