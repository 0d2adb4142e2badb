import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting

/// Football matches as the broker would push them (a start with the attributes, key-moment and routine updates, an
/// end), rendered by the real `MatchRenderer`, and a Web Push sink aimed at a fake push service.
enum WebPushSinkFixture {
    /// 2026-04-21T15:12:09Z: the sink's wall clock, so that TTLs are exact.
    static let now = Date(timeIntervalSince1970: 1_776_784_329)
    static let nowSeconds = 1_776_784_329
    static let subject = "mailto:push@example.com"

    /// One push of a match, and what the browser should see of it.
    struct Step {
        var delivery: Delivery
        var event: ActivityEvent
        var isKeyMoment: Bool
        /// Unix seconds of the update: tells the pushes of one match apart in what the browser got.
        var timestamp: Int
    }

    static let arsenal = Team(id: "ars", name: "Arsenal", short: "ARS")
    static let chelsea = Team(id: "che", name: "Chelsea", short: "CHE")

    static func snapshot(_ matchId: String, _ status: MatchStatus, home: Int, away: Int, clock: String?) -> MatchSnapshot {
        MatchSnapshot(
            id: matchId, sport: .football, status: status, competition: "Premier League", home: arsenal, away: chelsea,
            score: .teamTotals(TeamScore(home: home, away: away, period: status == .live ? "2H" : nil, clock: clock)))
    }

    /// A match of `updates` updates between its start and its end; every third update is a goal (a key moment).
    static func match(_ matchId: String, updates: Int = 4, startOffset: Int = 0) throws -> [Step] {
        var steps: [Step] = []
        var index = 0
        func add(_ event: ActivityEvent, _ snapshot: MatchSnapshot, alert: APS.Alert?, attributes: ActivityAttributes? = nil) throws {
            let timestamp = nowSeconds + startOffset + index
            let aps = APS(
                timestamp: timestamp, event: event, contentState: try MatchRenderer.render(snapshot).contentState,
                staleDate: event == .end ? nil : timestamp + 900, dismissalDate: event == .end ? timestamp + 900 : nil,
                alert: alert, attributes: attributes)
            let delivery = Delivery(
                id: "dlv_\(matchId)_\(index)", matchId: matchId, activityId: "act_\(matchId)",
                target: PushTarget(kind: .updateToken, value: String(repeating: "ab", count: 32)),
                apns: APNsHeaders(topic: "com.example.scores.push-type.liveactivity", priority: alert == nil ? 5 : 10, expiration: timestamp + 3600),
                payload: try PushPayload(aps))
            steps.append(Step(delivery: delivery, event: event, isKeyMoment: alert != nil, timestamp: timestamp))
            index += 1
        }
        let kickOff = snapshot(matchId, .live, home: 0, away: 0, clock: "46:00")
        try add(.start, kickOff, alert: APS.Alert(title: "Arsenal v Chelsea", body: "Second half under way"),
                attributes: ActivityAttributes(activityId: "act_\(matchId)", snapshot: kickOff))
        var goals = 0
        for update in 0..<updates {
            let goal = update % 3 == 2
            if goal { goals += 1 }
            let state = snapshot(matchId, .live, home: goals, away: 0, clock: "\(50 + update * 5):00")
            try add(.update, state, alert: goal ? APS.Alert(title: "Goal", body: "Arsenal \(goals)-0") : nil)
        }
        try add(.end, snapshot(matchId, .completed, home: goals, away: 0, clock: nil), alert: APS.Alert(title: "Full time", body: "Arsenal win"))
        return steps
    }

    static var quiet: Logger { Logger(label: "test.webpush", factory: { _ in SwiftLogNoOpLogHandler() }) }

    /// A sink sending to `subscriber`, with fast retries on `clock` unless told otherwise.
    static func sink(
        _ subscriber: FakePushService.Subscriber, key: P256.Signing.PrivateKey, client: HTTPClient, clock: any Clock<Duration> = InstantClock(),
        deadLetters: any DeadLetterRecorder = InMemoryDeadLetters(), metrics: RecordingMetrics = RecordingMetrics(),
        retry: RetryPolicy = RetryPolicy(maxAttempts: 5, initialBackoff: .milliseconds(100), jitter: 0),
        maxConcurrentRequests: Int = 4, now: @escaping @Sendable () -> Date = { WebPushSinkFixture.now },
        logger: Logger = WebPushSinkFixture.quiet
    ) throws -> WebPushSink {
        let subscription = try WebPushMessage.Subscription(json: subscriber.json, now: now())
        return try WebPushSink(
            configuration: WebPushSinkConfiguration(
                recipient: .subscription(subscription), vapid: VAPIDCredentials(privateKey: key, subject: subject), retry: retry,
                requestTimeout: .seconds(60), maxConcurrentRequests: maxConcurrentRequests),
            client: client, deadLetters: deadLetters, clock: clock, now: now, metricsFactory: metrics, logger: logger)
    }

    /// A fake push service checking token expiry against the sink's clock, a subscription bound to a fresh VAPID key,
    /// and a client; all stopped afterwards.
    static func withService(
        _ body: (FakePushService, FakePushService.Subscriber, P256.Signing.PrivateKey, HTTPClient) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        try await FakePushService.with(now: { WebPushSinkFixture.now }) { service in
            let subscriber = service.subscribe(applicationServerKey: Base64URL.encode(key.publicKey.x963Representation))
            try await WebhookFixture.withClient { client in try await body(service, subscriber, key, client) }
        }
    }

    /// `(match, timestamp)` of a pushed message: which step it was.
    static func identity(_ message: [String: Any]) -> String {
        let data = message["data"] as? [String: Any]
        return "\(data?["match"] as? String ?? "?")@\(data?["ts"] as? Int ?? -1)"
    }

    static func identity(_ step: Step) -> String { "\(step.delivery.matchId)@\(step.timestamp)" }
}
