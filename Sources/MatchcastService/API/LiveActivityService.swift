import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastStore

/// The one entry point for the HTTP API and the pollers: devices, tokens, follows, activities,
/// matches. Validates what callers send, then hands lifecycle decisions to `LifecycleManager`.
///
/// Build it with a store, the lifecycle manager that shares that store, and a way to tell whether
/// each feed is reachable (for `/readyz`):
/// ```swift
/// let service = LiveActivityService(store: store, lifecycle: manager, feeds: { ["feed": true] }, now: { Date() })
/// ```
public final class LiveActivityService: Sendable {
    public let store: any MatchcastStore
    public let lifecycle: LifecycleManager
    private let feeds: @Sendable () -> [String: Bool]
    private let providers: @Sendable () -> [ProviderStatus]
    private let sinksHealthy: @Sendable () -> Bool
    /// Whether some sink delivers to targets of a kind for the app of a topic: an address no sink can reach is refused
    /// when registered.
    private let sinksTake: @Sendable (PushTarget.Kind, _ topic: String) -> Bool
    /// The apps served: a device registers for one of them (docs/apps.md).
    public let apps: AppCatalog
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let metrics: BrokerMetrics
    private let access: StoreAccess
    private let tokens: TokenManager
    private let followManager: FollowManager
    /// The stored secret hashes of devices that called lately: a device's calls do not each read the store.
    private let secrets: DeviceSecretCache
    /// Runs changes to a match's activities where the match is run (this replica, or its owner).
    let router: MatchRouter
    /// The follows changed here, for the poll supervisor to start or stop match sources.
    public let followChanges = FollowChanges()

    public init(
        store: any MatchcastStore, lifecycle: LifecycleManager,
        feeds: @escaping @Sendable () -> [String: Bool] = { [:] },
        providers: @escaping @Sendable () -> [ProviderStatus] = { [] },
        sinksHealthy: @escaping @Sendable () -> Bool = { true },
        sinksTake: @escaping @Sendable (PushTarget.Kind, _ topic: String) -> Bool = { _, _ in true },
        apps: AppCatalog = BrokerSettings().apps,
        now: @escaping @Sendable () -> Date = { Date() },
        metrics: BrokerMetrics = BrokerMetrics(),
        commandAnswerTimeout: Duration = .seconds(5),
        clock: any Clock<Duration> = ContinuousClock(),
        deviceSecretCapacity: Int = DeviceSecretCache.defaultCapacity,
        logger: Logger = Logger(label: "matchcast.service")
    ) {
        self.metrics = metrics
        secrets = DeviceSecretCache(capacity: deviceSecretCapacity)
        self.store = store
        access = StoreAccess(store: store, logger: logger)
        let changes = followChanges
        let router = MatchRouter(
            lifecycle: lifecycle, ownership: lifecycle.ownership, gained: { changes.unsure($0) },
            answerTimeout: commandAnswerTimeout, clock: clock, logger: logger)
        self.router = router
        tokens = TokenManager(access: access, router: router, now: now, logger: logger)
        followManager = FollowManager(access: access, router: router, now: now)
        self.lifecycle = lifecycle
        self.feeds = feeds
        self.providers = providers
        self.sinksHealthy = sinksHealthy
        self.sinksTake = sinksTake
        self.apps = apps
        self.now = now
        self.logger = logger
    }

    // MARK: Devices

    /// Registers an app install, of the app `app` (the default app when nil; docs/apps.md). The secret is returned
    /// once; only its SHA-256 is stored.
    public func registerDevice(app: String? = nil) async throws(ServiceError) -> DeviceRegistration {
        let appId = app ?? AppCatalog.defaultId
        guard apps.app(id: appId) != nil else {
            throw ServiceError(.invalidRequest, "field 'app': no app '\(appId.prefix(40))' is served here (\(apps.apps.map(\.id).joined(separator: ", ")))")
        }
        var rng = SystemRandomNumberGenerator()
        let base = Identifier.make(prefix: "dev_", milliseconds: Int64(now().timeIntervalSince1970 * 1000), using: &rng)
        let deviceId = AppCatalog.deviceId(app: appId, base: base)
        let secret = deviceId + "." + Self.randomToken(bytes: 32)
        let device = DeviceRecord(id: deviceId, secretHash: Self.hash(secret), createdAt: now())
        try await access { try await $0.createDevice(device) }
        // What the store now holds: the device's next call (its token, at once, as a rule) need not read it back.
        secrets.remember(deviceId, secretHash: device.secretHash, at: device.createdAt)
        logger.info("device registered", metadata: ["device": "\(deviceId)"])
        metrics.deviceRegistered(app: appId)
        return DeviceRegistration(deviceId: deviceId, deviceSecret: secret)
    }

    /// The device a bearer secret belongs to. Secrets are `<deviceId>.<random>`; the hash is compared
    /// in constant time.
    public func authenticateDevice(secret: String) async throws(ServiceError) -> String {
        guard secret.utf8.count <= 256, let dot = secret.firstIndex(of: ".") else {
            throw ServiceError(.unauthorized, "invalid device secret")
        }
        let deviceId = String(secret[..<dot])
        guard Validation.isIdentifier(deviceId) else { throw ServiceError(.unauthorized, "invalid device secret") }
        // A device of an app taken out of the configuration: nothing could be sent to it with its own app's keys.
        if let appId = AppCatalog.appId(ofDevice: deviceId), apps.app(id: appId) == nil {
            throw ServiceError(.forbidden, "app '\(appId.prefix(40))' is no longer served here")
        }
        let moment = now()
        let stored: String
        if let known = secrets.secretHash(of: deviceId, at: moment) {
            stored = known
        } else {
            guard let device = try await access({ try await $0.device(id: deviceId) }) else {
                throw ServiceError(.unauthorized, "invalid device secret")
            }
            secrets.remember(deviceId, secretHash: device.secretHash, at: moment)
            stored = device.secretHash
        }
        guard Self.constantTimeEqual(stored, Self.hash(secret)) else { throw ServiceError(.unauthorized, "invalid device secret") }
        return deviceId
    }

    // MARK: Tokens

    /// Replaces the device's push-to-start token (tokens rotate); waiting activities may now start.
    public func setPushToStartToken(deviceId: String, token: String, environment: APNsEnvironment) async throws(ServiceError) {
        try await tokens.setPushToStartToken(deviceId: deviceId, token: token, environment: environment)
    }

    /// Sets an Android device's FCM registration token (tokens rotate): its activities start, update and end through
    /// it, and those already started move to it.
    public func setFCMToken(deviceId: String, token: String) async throws(ServiceError) {
        let token = try Validation.fcmToken(token, field: "token")
        try reachable(.fcmToken, sink: "fcm", deviceId: deviceId)
        try await tokens.setDirectAddress(deviceId: deviceId, .fcm(token))
    }

    /// Sets a browser's Web Push subscription, as its `PushSubscription.toJSON()` gives it: its activities start,
    /// update and end through it, and those already started move to it.
    public func setWebPushSubscription(deviceId: String, json: some DataProtocol) async throws(ServiceError) {
        let subscription = try Validation.webPushSubscription(json)
        try reachable(.webPushSubscription, sink: "webpush", deviceId: deviceId)
        try await tokens.setDirectAddress(deviceId: deviceId, .webPush(subscription))
    }

    /// Refuses an address no configured sink delivers to: its pushes would be made and go nowhere.
    private func reachable(_ kind: PushTarget.Kind, sink: String, deviceId: String) throws(ServiceError) {
        guard let topic = apps.topic(ofDevice: deviceId), sinksTake(kind, topic) else {
            throw ServiceError(.invalidRequest, "this server sends nothing to \(sink == "fcm" ? "FCM" : "Web Push"): "
                + "it runs without the \(sink) sink (nor a webhook or stdout sink passing deliveries on)")
        }
    }

    /// A downstream push service reports a dead token: whatever depended on it ends. With `app`, only a token of that
    /// app's devices is (an app's scoped admin key, docs/apps.md): another app's is left alone, as if unknown.
    public func reportDeadToken(_ token: String, reason: String, app: String? = nil) async throws(ServiceError) -> Bool {
        try await tokens.invalidate(token, reason: reason, app: app)
    }

    // MARK: Follows

    /// Follows a match (idempotent): an activity starts as soon as the match is live.
    public func follow(deviceId: String, matchId: String) async throws(ServiceError) -> FollowView {
        let view = try await followManager.follow(deviceId: deviceId, matchId: matchId)
        followChanges.followed(matchId)
        return view
    }

    /// Wakes the poll supervisor: this replica gained matches to poll.
    func pollersShouldLook() {
        followChanges.relist()
    }

    /// Unfollows (idempotent) and ends the device's activity for the match at once.
    public func unfollow(deviceId: String, matchId: String) async throws(ServiceError) {
        try await followManager.unfollow(deviceId: deviceId, matchId: matchId)
        followChanges.unsure(matchId)
    }

    /// The device's follows with their open activities, for the app to sync.
    public func follows(deviceId: String) async throws(ServiceError) -> [FollowView] {
        try await followManager.follows(deviceId: deviceId)
    }

    // MARK: Activities

    /// Adopts an activity the app started, or registers/rotates the update token of one the broker started.
    public func putActivity(
        activityId: String, deviceId: String, matchId: String, updateToken: String, environment: APNsEnvironment?
    ) async throws(ServiceError) -> ActivityView {
        try Validation.identifier(activityId, field: "activityId")
        try Validation.identifier(matchId, field: "matchId")
        let token = try Validation.token(updateToken, field: "updateToken")
        var env = environment ?? .production
        if environment == nil, let known = try await tokens.environment(deviceId: deviceId) { env = known }
        let command = MatchCommand(
            .registerUpdateToken, matchId: matchId, deviceId: deviceId, activityId: activityId, token: token, environment: env)
        let record: ActivityRecord
        switch try await router.perform(command) {
        case .here(let made?): record = made
        case .here(nil), .byOwner:
            guard let stored = try await access({ try await $0.activity(id: activityId) }) else {
                throw ServiceError(.unavailable, "activity \(activityId) was not saved; retry")
            }
            record = stored
        }
        // Adopting implies following (the match must be polled), once the broker has accepted it.
        if try await followManager.ensureFollow(deviceId: deviceId, matchId: matchId) { followChanges.followed(matchId) }
        logger.info("update token registered", metadata: ["activity": "\(activityId)", "token": "\(Redact.token(token))"])
        return ActivityView(activityId: record.activityId, deviceId: deviceId, matchId: matchId, state: record.phase.rawValue)
    }

    /// The user dismissed the activity: stop pushing.
    public func deleteActivity(activityId: String, deviceId: String) async throws(ServiceError) {
        try Validation.identifier(activityId, field: "activityId")
        guard let record = try await access({ try await $0.activity(id: activityId) }) else {
            throw ServiceError(.notFound, "no activity \(activityId)")
        }
        _ = try await router.perform(MatchCommand(.dismiss, matchId: record.matchId, deviceId: deviceId, activityId: activityId))
    }

    // MARK: Matches

    /// Matches as the broker last saw them, with their current content-state.
    public func matches() async throws(ServiceError) -> [MatchView] {
        var views: [MatchView] = []
        for record in try await access({ try await $0.matches() }) {
            views.append(await view(record))
        }
        return views
    }

    public func match(id: String) async throws(ServiceError) -> MatchView {
        try Validation.identifier(id, field: "id")
        guard let record = try await access({ try await $0.match(id: id) }) else {
            throw ServiceError(.notFound, "no match \(id)")
        }
        return await view(record)
    }

    /// Records the gauges: activities by state, follows, tokens.
    public func recordCensus() async {
        guard let counts = try? await store.census() else { return }
        await metrics.census(
            activities: lifecycle.census(), follows: counts.follows,
            tokens: ["pushToStart": counts.pushToStartTokens, "update": counts.updateTokens, "fcm": counts.fcmTokens,
                     "webpush": counts.webPushSubscriptions])
    }

    /// Liveness of the store and the feeds, for `/readyz`.
    public func readiness() async -> Readiness {
        let storeOK = (try? await store.ping()) != nil
        return Readiness(store: storeOK, feeds: feeds(), sinks: sinksHealthy(), providers: providers())
    }

    private func view(_ record: MatchRecord) async -> MatchView {
        let snapshot = record.snapshot
        let content = await lifecycle.latest(matchId: snapshot.id)?.content ?? (try? MatchRenderer.render(snapshot))?.contentState
        return MatchView(id: snapshot.id, sport: snapshot.sport, status: snapshot.status, home: snapshot.home,
                         away: snapshot.away, updatedAt: snapshot.updatedAt ?? record.updatedAt, contentState: content,
                         channelId: await lifecycle.broadcastChannelId(matchId: snapshot.id))
    }

    // MARK: Internals

    /// Now, on the service's clock.
    func currentDate() -> Date { now() }

    static func hash(_ secret: String) -> String {
        Hex.lowercase(SHA256.hash(data: Data(secret.utf8)), count: SHA256.byteCount)
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func randomToken(bytes: Int) -> String {
        var rng = SystemRandomNumberGenerator()
        let data = Data((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &rng) })
        return data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
