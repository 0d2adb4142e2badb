extension Broker {
    /// Turns broadcast channel mode on. Call before `restore()`, and run `channels` with `services`
    /// (it deletes the channels of ended matches).
    public func useBroadcastChannels(_ channels: BroadcastChannels) async {
        await channels.watch(relay)
        await service.lifecycle.useBroadcastChannels(channels)
    }
}
