/// Counts of what a store holds, for the broker's gauges.
public struct StoreCensus: Sendable, Hashable {
    public var devices: Int
    public var follows: Int
    public var pushToStartTokens: Int
    /// Update tokens of open activities.
    public var updateTokens: Int

    public init(devices: Int, follows: Int, pushToStartTokens: Int, updateTokens: Int) {
        self.devices = devices
        self.follows = follows
        self.pushToStartTokens = pushToStartTokens
        self.updateTokens = updateTokens
    }
}
