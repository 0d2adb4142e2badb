import MatchcastCore

/// Three apps of one deployment, for the catalog and builder tests.
enum AppsFixture {
    // Topics are written out in full, not made with `APNsHeaders.topic`, so a wrong suffix would show.
    static let scoresTopic = "com.example.scores.push-type.liveactivity"
    static let fantasyTopic = "com.example.fantasy.push-type.liveactivity"
    static let kidsTopic = "com.example.kids.push-type.liveactivity"

    /// The default app `com.example.scores`, then `fantasy` and `kids`.
    static let catalog = AppCatalog(defaultBundleId: "com.example.scores", others: [
        AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy"),
        AppCatalog.App(id: "kids", bundleId: "com.example.kids"),
    ])
}
