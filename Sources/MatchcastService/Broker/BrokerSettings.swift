import MatchcastCore

/// How the broker behaves, from configuration.
public struct BrokerSettings: Sendable, Hashable {
    /// The default app's bundle id; the APNs topic is `<bundle id>.push-type.liveactivity`.
    public var bundleId: String
    /// The apps served beside the default one (docs/apps.md); empty for one app.
    public var otherApps: [AppCatalog.App]
    public var activityPolicy: ActivityPolicy
    /// At most one push-to-start `start` per device per this interval (Apple throttles bursts).
    public var pushToStartSpacing: Duration
    /// Seed of activity and delivery ids; random in production, fixed in tests and replay.
    public var seed: UInt64

    public init(
        bundleId: String = "com.example.matchcast",
        activityPolicy: ActivityPolicy = ActivityPolicy(),
        pushToStartSpacing: Duration = .seconds(5),
        seed: UInt64 = UInt64.random(in: 1...UInt64.max),
        otherApps: [AppCatalog.App] = []
    ) {
        self.bundleId = bundleId
        self.otherApps = otherApps
        self.activityPolicy = activityPolicy
        self.pushToStartSpacing = pushToStartSpacing
        self.seed = seed
    }

    /// Every app served, the default one first.
    public var apps: AppCatalog { AppCatalog(defaultBundleId: bundleId, others: otherApps) }
}
