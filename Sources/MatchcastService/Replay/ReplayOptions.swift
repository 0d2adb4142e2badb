import MatchcastCore

/// How a recording is replayed.
public struct ReplayOptions: Sendable, Hashable {
    /// Synthetic devices, each following every match in the recording with its own tokens.
    public var followers: Int
    /// Seed of activity and delivery ids: the same file, options and seed give the same bytes.
    public var seed: UInt64
    public var bundleId: String
    public var policy: ActivityPolicy
    /// Simulated seconds per real second; nil replays as fast as possible. Output is the same either way.
    public var speed: Double?

    public init(
        followers: Int = 1, seed: UInt64 = 1, bundleId: String = "com.example.matchcast",
        policy: ActivityPolicy = ActivityPolicy(), speed: Double? = nil
    ) {
        self.followers = followers
        self.seed = seed
        self.bundleId = bundleId
        self.policy = policy
        self.speed = speed
    }
}

/// What a replay did, for the closing summary.
public struct ReplaySummary: Sendable, Hashable {
    public var observations = 0
    public var deliveriesByEvent: [ActivityEvent: Int] = [:]
    /// Deliveries that carried an alert (priority 10 key events, starts and ends included).
    public var alerts = 0
    /// Key events, counted once per match (not per follower), by kind.
    public var keyEvents: [KeyEvent.Kind: Int] = [:]
    public var simulatedSeconds = 0.0
    public var wallSeconds = 0.0
    /// The last result line of each match, by match id.
    public var results: [String: String] = [:]

    public var deliveries: Int { deliveriesByEvent.values.reduce(0, +) }
}

/// Progress while replaying (for a progress bar).
public struct ReplayProgress: Sendable, Hashable {
    public var done: Int
    public var total: Int
    public var simulatedSeconds: Double
    public var deliveries: Int
}
