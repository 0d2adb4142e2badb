import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

/// One app's sink in a test: keeps every batch it is given, takes the kinds it is told, keeps its own token answers,
/// and (as told) takes everything, leaves some deliveries (naming them, or not), or fails outright.
private final class AppSink: DeliverySink, Sendable {
    enum Behaviour: Sendable {
        case takesAll
        /// Throws a `PartialDeliveryFailure` naming the deliveries of these ids that it was given.
        case leaves(Set<String>)
        /// Throws a `PartialDeliveryFailure` naming none: it cannot tell what it took.
        case leavesUnnamed
        /// Throws an error that names nothing.
        case breaks
    }

    struct LeftBehind: PartialDeliveryFailure, CustomStringConvertible {
        let undelivered: [Delivery]
        var description: String { "left \(undelivered.count) (test)" }
    }

    struct Broken: Error, CustomStringConvertible {
        var description: String { "broken (test)" }
    }

    let name: String
    let answers: TokenAnswers?
    private let kinds: Set<PushTarget.Kind>
    private let behaviour: Behaviour
    private let healthy: Bool
    private let counts: Bool
    private let state = Mutex<(batches: [[Delivery]], flushes: Int)>(([], 0))

    init(
        name: String = "apns", behaviour: Behaviour = .takesAll,
        kinds: Set<PushTarget.Kind> = [.updateToken, .pushToStartToken, .channel],
        answers: TokenAnswers? = nil, healthy: Bool = true, countsDeliveries: Bool = false
    ) {
        self.name = name
        self.behaviour = behaviour
        self.kinds = kinds
        self.answers = answers
        self.healthy = healthy
        counts = countsDeliveries
    }

    func lastAnswer(token: String) -> TokenAnswers.Answer? { answers?.last(token: token) }
    var isHealthy: Bool { healthy }
    var countsDeliveries: Bool { counts }
    func takes(_ kind: PushTarget.Kind) -> Bool { kinds.contains(kind) }

    func deliver(_ batch: [Delivery]) async throws {
        state.withLock { $0.batches.append(batch) }
        switch behaviour {
        case .takesAll: return
        case .leaves(let ids): throw LeftBehind(undelivered: batch.filter { ids.contains($0.id) })
        case .leavesUnnamed: throw LeftBehind(undelivered: [])
        case .breaks: throw Broken()
        }
    }

    func flush() async throws { state.withLock { $0.flushes += 1 } }

    /// Every batch given, in order.
    var batches: [[Delivery]] { state.withLock { $0.batches } }
    /// The ids of every delivery given, in order.
    var given: [String] { batches.flatMap { $0.map(\.id) } }
    var flushes: Int { state.withLock { $0.flushes } }
}

private enum RoutedFixture {
    static let scoresTopic = "com.example.scores.push-type.liveactivity"
    static let fantasyTopic = "com.example.fantasy.push-type.liveactivity"
    static let kidsTopic = "com.example.kids.push-type.liveactivity"
    static let strayTopic = "com.example.removed.push-type.liveactivity"

    static let payload: PushPayload = {
        let state = ContentState(status: "live", statusText: "Live", home: .init(name: "MUN", score: "2"),
                                 away: .init(name: "LIV", score: "1"), summary: "MUN 2-1 LIV")
        return try! PushPayload(APS(timestamp: 1_776_784_329, event: .update, contentState: state, staleDate: 1_776_784_629))
    }()

    static func delivery(_ id: String, _ topic: String, kind: PushTarget.Kind = .updateToken) -> Delivery {
        Delivery(id: id, matchId: "m", activityId: "act_" + id, target: PushTarget(kind: kind, value: "tok_" + id),
                 apns: APNsHeaders(topic: topic, priority: 10, expiration: 1_776_784_629), payload: payload)
    }

    /// The routed sink of three apps' sinks: `default`, `fantasy`, `kids`.
    static func routed(
        _ scores: AppSink, _ fantasy: AppSink, _ kids: AppSink, deadLetters: InMemoryDeadLetters = InMemoryDeadLetters(),
        metrics: RecordingMetrics = RecordingMetrics()
    ) -> AppRoutedSink {
        AppRoutedSink(name: "apns", routes: [
            AppRoutedSink.Route(appId: "default", topic: scoresTopic, sink: scores),
            AppRoutedSink.Route(appId: "fantasy", topic: fantasyTopic, sink: fantasy),
            AppRoutedSink.Route(appId: "kids", topic: kidsTopic, sink: kids),
        ], deadLetters: deadLetters, metricsFactory: metrics)
    }
}

/// One push service's sink for several apps: each delivery goes to the sink of the app its topic names, once; a
/// delivery of a kind it takes whose topic no app has is dead-lettered (status 0) and counted, never sent through
/// another app's sink; kinds it does not take are left alone. When an app's sink fails, the failure names only what
/// was not taken (what that sink named, or its whole part when it named nothing), the other apps' having gone once.
@Suite("Apps: the app-routed sink")
struct AppRoutedSinkTests {
    fileprivate typealias F = RoutedFixture

    @Test("a batch of one app goes to that app's sink alone, whole and in order")
    func oneApp() async throws {
        let (scores, fantasy, kids) = (AppSink(), AppSink(), AppSink())
        let deadLetters = InMemoryDeadLetters()
        let sink = F.routed(scores, fantasy, kids, deadLetters: deadLetters)
        let batch = (1...4).map { F.delivery("f\($0)", F.fantasyTopic) }
        try await sink.deliver(batch)
        #expect(fantasy.batches == [batch])
        #expect(scores.batches.isEmpty && kids.batches.isEmpty)
        #expect(await deadLetters.entries.isEmpty)

        try await sink.deliver([])
        #expect(scores.batches.isEmpty && fantasy.batches.count == 1 && kids.batches.isEmpty, "an empty batch goes nowhere")
    }

    @Test("a mixed batch: each app's sink gets its own deliveries, once, in batch order")
    func mixed() async throws {
        let (scores, fantasy, kids) = (AppSink(), AppSink(), AppSink())
        let sink = F.routed(scores, fantasy, kids)
        let batch = [
            F.delivery("d1", F.scoresTopic), F.delivery("f1", F.fantasyTopic), F.delivery("d2", F.scoresTopic),
            F.delivery("k1", F.kidsTopic), F.delivery("f2", F.fantasyTopic), F.delivery("d3", F.scoresTopic),
        ]
        try await sink.deliver(batch)
        #expect(scores.given == ["d1", "d2", "d3"])
        #expect(fantasy.given == ["f1", "f2"])
        #expect(kids.given == ["k1"])
        #expect(scores.batches.count == 1 && fantasy.batches.count == 1 && kids.batches.count == 1, "one call per app")
        #expect(fantasy.batches.first?.first == batch[1], "the deliveries themselves, unchanged")
    }

    @Test("a topic no app has: dead-lettered with status 0 and counted, sent through no app's sink")
    func strayTopic() async throws {
        let (scores, fantasy, kids) = (AppSink(), AppSink(), AppSink())
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        let sink = F.routed(scores, fantasy, kids, deadLetters: deadLetters, metrics: metrics)
        let batch = [
            F.delivery("d1", F.scoresTopic), F.delivery("s1", F.strayTopic), F.delivery("f1", F.fantasyTopic),
            F.delivery("s2", F.strayTopic, kind: .pushToStartToken),
        ]
        try await sink.deliver(batch)
        #expect(scores.given == ["d1"] && fantasy.given == ["f1"] && kids.given.isEmpty)
        let entries = await deadLetters.entries
        #expect(entries.count == 1)
        #expect(entries.first?.deliveries.map(\.id) == ["s1", "s2"])
        #expect(entries.first?.status == 0)
        #expect(entries.first?.body.contains(F.strayTopic) == true, "\(entries.first?.body ?? "")")
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter"), ("app", "none")]) == 2)

        // A batch of the stray topic alone: dead-lettered too, no app's sink called.
        try await sink.deliver([F.delivery("s3", F.strayTopic)])
        #expect(await deadLetters.deliveries.map(\.id) == ["s1", "s2", "s3"])
        #expect(scores.batches.count == 1 && fantasy.batches.count == 1 && kids.batches.isEmpty)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter"), ("app", "none")]) == 3)
    }

    @Test("a stray delivery of a kind no app's sink takes is not this sink's: neither dead-lettered nor counted")
    func strayOfAnotherKind() async throws {
        let (scores, fantasy, kids) = (AppSink(), AppSink(), AppSink())
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        let sink = F.routed(scores, fantasy, kids, deadLetters: deadLetters, metrics: metrics)
        try await sink.deliver([
            F.delivery("s1", F.strayTopic, kind: .fcmToken), F.delivery("s2", F.strayTopic, kind: .webPushSubscription),
        ])
        try await sink.deliver([F.delivery("d1", F.scoresTopic), F.delivery("s3", F.strayTopic, kind: .fcmToken)])
        #expect(await deadLetters.entries.isEmpty)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter"), ("app", "none")]) == 0)
        #expect(scores.given == ["d1"] && fantasy.given.isEmpty && kids.given.isEmpty)
    }

    @Test("an app's sink leaves some (naming them): only those are reported, the other apps' went once")
    func partialFailure() async throws {
        let scores = AppSink(), kids = AppSink()
        let fantasy = AppSink(behaviour: .leaves(["f2"]))
        let sink = F.routed(scores, fantasy, kids)
        let batch = [
            F.delivery("d1", F.scoresTopic), F.delivery("f1", F.fantasyTopic), F.delivery("f2", F.fantasyTopic),
            F.delivery("k1", F.kidsTopic), F.delivery("f3", F.fantasyTopic),
        ]
        let failure = try await #require(throws: AppRoutedSink.Failure.self) { try await sink.deliver(batch) }
        #expect(failure.undelivered.map(\.id) == ["f2"])
        #expect(failure.errors.map(\.appId) == ["fantasy"])
        #expect(failure.errors.first?.error is AppSink.LeftBehind)
        #expect(failure.description.contains("app fantasy"))
        #expect(!failure.description.contains("app default") && !failure.description.contains("app kids"))
        #expect(scores.given == ["d1"] && kids.given == ["k1"], "the other apps' deliveries went, once")
        #expect(fantasy.given == ["f1", "f2", "f3"])
        // Seen as any sink's failure (as the dispatcher and the relay see it): the one delivery to hand over again.
        let partial: any Error = failure
        #expect((partial as? any PartialDeliveryFailure)?.undelivered.map(\.id) == ["f2"])
    }

    @Test("an app's sink fails naming nothing: its whole part is reported, the other apps' went once")
    func plainFailure() async throws {
        let scores = AppSink(), kids = AppSink()
        let fantasy = AppSink(behaviour: .breaks)
        let sink = F.routed(scores, fantasy, kids)
        let batch = [
            F.delivery("f1", F.fantasyTopic), F.delivery("d1", F.scoresTopic), F.delivery("f2", F.fantasyTopic),
            F.delivery("k1", F.kidsTopic),
        ]
        let failure = try await #require(throws: AppRoutedSink.Failure.self) { try await sink.deliver(batch) }
        #expect(failure.undelivered.map(\.id) == ["f1", "f2"])
        #expect(failure.errors.map(\.appId) == ["fantasy"])
        #expect(failure.errors.first?.error is AppSink.Broken)
        #expect(scores.given == ["d1"] && kids.given == ["k1"])

        // A partial failure that names none means the same: it cannot tell.
        let unnamed = AppSink(behaviour: .leavesUnnamed)
        let other = F.routed(AppSink(), unnamed, AppSink())
        let left = try await #require(throws: AppRoutedSink.Failure.self) { try await other.deliver(batch) }
        #expect(left.undelivered.map(\.id) == ["f1", "f2"])
    }

    @Test("a batch of one app whose sink fails: what it names, or all of it when it names nothing")
    func oneAppFailing() async throws {
        let batch = [F.delivery("k1", F.kidsTopic), F.delivery("k2", F.kidsTopic), F.delivery("k3", F.kidsTopic)]
        let leaving = F.routed(AppSink(), AppSink(), AppSink(behaviour: .leaves(["k1", "k3"])))
        let partial = try await #require(throws: AppRoutedSink.Failure.self) { try await leaving.deliver(batch) }
        #expect(partial.undelivered.map(\.id) == ["k1", "k3"])
        #expect(partial.errors.map(\.appId) == ["kids"])

        let breaking = F.routed(AppSink(), AppSink(), AppSink(behaviour: .breaks))
        let whole = try await #require(throws: AppRoutedSink.Failure.self) { try await breaking.deliver(batch) }
        #expect(whole.undelivered.map(\.id) == ["k1", "k2", "k3"])
        #expect(whole.errors.map(\.appId) == ["kids"])
    }

    @Test("two apps' sinks fail: both named, each with only what it did not take; the third app's went once")
    func twoFailing() async throws {
        let scores = AppSink(behaviour: .breaks)
        let fantasy = AppSink(behaviour: .leaves(["f2"]))
        let kids = AppSink()
        let sink = F.routed(scores, fantasy, kids)
        let batch = [
            F.delivery("d1", F.scoresTopic), F.delivery("f1", F.fantasyTopic), F.delivery("k1", F.kidsTopic),
            F.delivery("f2", F.fantasyTopic), F.delivery("d2", F.scoresTopic),
        ]
        let failure = try await #require(throws: AppRoutedSink.Failure.self) { try await sink.deliver(batch) }
        #expect(Set(failure.undelivered.map(\.id)) == ["d1", "d2", "f2"])
        #expect(failure.undelivered.count == 3)
        #expect(Set(failure.errors.map(\.appId)) == ["default", "fantasy"])
        #expect(kids.given == ["k1"])
    }

    @Test("a stray delivery beside a failing app: dead-lettered, not reported undelivered")
    func strayBesideFailure() async throws {
        let deadLetters = InMemoryDeadLetters()
        let sink = F.routed(AppSink(), AppSink(behaviour: .breaks), AppSink(), deadLetters: deadLetters)
        let batch = [F.delivery("f1", F.fantasyTopic), F.delivery("s1", F.strayTopic)]
        let failure = try await #require(throws: AppRoutedSink.Failure.self) { try await sink.deliver(batch) }
        #expect(failure.undelivered.map(\.id) == ["f1"])
        #expect(await deadLetters.deliveries.map(\.id) == ["s1"])
    }

    @Test("takes(kind, topic:): only its apps' topics, and of those only the kinds that app's sink takes")
    func takesByTopic() {
        let scores = AppSink(kinds: [.updateToken, .pushToStartToken, .channel, .fcmToken])
        let fantasy = AppSink(kinds: [.updateToken, .pushToStartToken])
        let kids = AppSink(kinds: [])
        let sink = F.routed(scores, fantasy, kids)
        #expect(sink.takes(.updateToken, topic: F.fantasyTopic))
        #expect(!sink.takes(.channel, topic: F.fantasyTopic), "fantasy's sink takes no channel")
        #expect(sink.takes(.channel, topic: F.scoresTopic))
        #expect(sink.takes(.fcmToken, topic: F.scoresTopic))
        #expect(!sink.takes(.fcmToken, topic: F.fantasyTopic))
        #expect(!sink.takes(.updateToken, topic: F.kidsTopic))
        #expect(!sink.takes(.updateToken, topic: F.strayTopic), "no app has the topic")
        #expect(!sink.takes(.updateToken, topic: "com.example.fantasy"), "a bundle id is not a topic")
        // By kind alone: any app's sink taking it.
        #expect(sink.takes(.fcmToken) && sink.takes(.channel) && sink.takes(.updateToken))
        #expect(!sink.takes(.webPushSubscription))
    }

    @Test("lastAnswer: the answer of whichever app's sink sent to the token; none for a token none sent to")
    func lastAnswer() {
        let at = Date(timeIntervalSince1970: 1_776_784_329)
        let fantasyAnswers = TokenAnswers(), kidsAnswers = TokenAnswers()
        fantasyAnswers.record([(token: "tok_fantasy", status: 410, reason: "Unregistered")], at: at)
        kidsAnswers.record([(token: "tok_kids", status: 200, reason: nil)], at: at)
        let sink = F.routed(AppSink(), AppSink(answers: fantasyAnswers), AppSink(answers: kidsAnswers))
        #expect(sink.lastAnswer(token: "tok_fantasy") == TokenAnswers.Answer(status: 410, reason: "Unregistered", at: at))
        #expect(sink.lastAnswer(token: "tok_kids") == TokenAnswers.Answer(status: 200, reason: nil, at: at))
        #expect(sink.lastAnswer(token: "tok_other") == nil)
    }

    @Test("health, counting and flush are its apps' sinks' together")
    func together() async throws {
        let healthy = F.routed(AppSink(), AppSink(), AppSink())
        #expect(healthy.isHealthy)
        #expect(!F.routed(AppSink(), AppSink(healthy: false), AppSink()).isHealthy, "one app's sink down: not healthy")
        #expect(!healthy.countsDeliveries)
        #expect(!F.routed(AppSink(countsDeliveries: true), AppSink(), AppSink(countsDeliveries: true)).countsDeliveries)
        #expect(F.routed(AppSink(countsDeliveries: true), AppSink(countsDeliveries: true), AppSink(countsDeliveries: true))
            .countsDeliveries)

        let sinks = (AppSink(), AppSink(), AppSink())
        let routed = F.routed(sinks.0, sinks.1, sinks.2)
        try await routed.flush()
        #expect([sinks.0.flushes, sinks.1.flushes, sinks.2.flushes] as [Int] == [1, 1, 1])
        #expect(routed.sinks.count == 3 && routed.routes.map(\.appId) == ["default", "fantasy", "kids"])
    }
}
