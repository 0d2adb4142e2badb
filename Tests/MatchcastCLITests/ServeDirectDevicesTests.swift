import Foundation
@testable import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle
import Testing

/// Issue 20 through `serve`'s own wiring: `--sink fcm --sink webpush` as `serve` builds them (flags → configuration →
/// `SinkFactory`, routed by each delivery's target), a broker on the fake feed, Android and web devices registered
/// through the service, the fake FCM and the fake push service (which decrypts every push). Dead addresses reach the
/// broker through the dead-token relay, as APNs's dead tokens do.
@Suite("serve: Android and web devices through the FCM and Web Push sinks, dead addresses forgotten", .serialized)
struct ServeDirectDevicesTests {
    static let subject = "mailto:ops@example.com"

    @Test("each device gets its match from start to end at its own address; a dead FCM token and a gone subscription are forgotten, their activities waiting again",
          .timeLimit(.minutes(5)))
    func androidAndWeb() async throws {
        try await FCMFixture.withServer { fcmServer, client in
            try await FakePushService.with { pushService in
                let folder = try ScratchFolder.newFolder("serve-direct")
                defer { try? FileManager.default.removeItem(at: folder) }
                let account = folder.appendingPathComponent("service-account.json")
                try FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: fcmServer.tokenURI).write(to: account)
                let pair = VAPIDCredentials.makeKeyPair()
                let vapidKey = folder.appendingPathComponent("vapid.pem")
                try Data(pair.privateKeyPEM.utf8).write(to: vapidKey)

                // Exactly as serve builds them.
                let configuration = try ServeCommand.parse([
                    "--sink", "fcm", "--fcm-service-account", account.path, "--fcm-endpoint", fcmServer.url,
                    "--sink", "webpush", "--vapid-key-file", vapidKey.path, "--vapid-subject", Self.subject,
                    "--deep-link", "scores://match/{matchId}?from=push",
                ]).loadConfiguration(environment: [:])
                let relay = DeadTokenRelay()
                var factory = SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
                factory.routesByTarget = true
                let built = try factory.makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, deadTokens: relay)
                defer { SinkFactory.shutdown(built) }
                #expect(built.map(\.name) == ["fcm", "webpush"])
                let sinks = built.map(InFlightSink.init)

                let rig = try FakeFeedBroker(
                    sinks: sinks, deadTokens: relay,
                    settings: BrokerSettings(activityPolicy: ActivityPolicy(coalesceInterval: .seconds(10)), seed: 12))
                try await rig.run {
                    let (clock, broker, store) = (rig.clock, rig.broker, rig.store)
                    let service = broker.service
                    let idle: () async -> Bool = { await broker.relay.depth == 0 && sinks.allSatisfy(\.isIdle) }
                    let idleness = ClockIdleness(clock: clock, floor: 4)

                    // A and C are healthy; B's FCM token is dead, D's browser unsubscribed.
                    let (tokenA, tokenB) = ("tokenA:" + String(repeating: "a", count: 60), "tokenB:" + String(repeating: "b", count: 60))
                    fcmServer.unregister(tokenB)
                    let browserC = pushService.subscribe(applicationServerKey: pair.publicKey)
                    let browserD = pushService.subscribe(applicationServerKey: pair.publicKey)
                    pushService.unsubscribe(browserD)
                    let a = try await service.registerDevice(), b = try await service.registerDevice()
                    let c = try await service.registerDevice(), d = try await service.registerDevice()
                    try await service.setFCMToken(deviceId: a.deviceId, token: tokenA)
                    try await service.setFCMToken(deviceId: b.deviceId, token: tokenB)
                    try await service.setWebPushSubscription(deviceId: c.deviceId, json: browserC.json)
                    try await service.setWebPushSubscription(deviceId: d.deviceId, json: browserD.json)
                    var activity: [String: String] = [:]
                    for device in [a, b, c, d] {
                        let id: String = try #require(try await service.follow(deviceId: device.deviceId, matchId: "football").activityId)
                        activity[device.deviceId] = id
                }

                func fcmEvents(_ token: String) -> [String] {
                    fcmServer.messages.filter { $0.token == token }.map { $0.data["mc_event"] ?? "?" }
                }
                func webEvents(_ browser: FakePushService.Subscriber) -> [String] {
                    pushService.delivered.filter { $0.subscriberId == browser.id }
                        .compactMap { ($0.json?["data"] as? [String: Any])?["event"] as? String }
                }

                // The whole match: A and C from start to end; B and D forgotten, their activities waiting again.
                try await ServeAPNsTests.drive(clock, idleness: idleness, idle: idle) {
                    let tokenOfB = await store.pushToStartToken(deviceId: b.deviceId)
                    let tokenOfD = await store.pushToStartToken(deviceId: d.deviceId)
                    let forgotten = tokenOfB == nil && tokenOfD == nil
                    return fcmEvents(tokenA).last == "end" && webEvents(browserC).last == "end" && forgotten
                }
                #expect(fcmServer.problems.isEmpty, "\(fcmServer.problems)")
                let pushProblems = pushService.log.flatMap(\.problems)
                #expect(pushProblems.isEmpty, "\(pushProblems)")
                for events in [fcmEvents(tokenA), webEvents(browserC)] {
                    #expect(events.first == "start" && events.filter { $0 == "start" }.count == 1, "\(events)")
                    #expect(events.filter { $0 == "end" }.count == 1 && events.count >= 3, "\(events)")
                }
                #expect(fcmServer.messages.allSatisfy { $0.token == tokenA }, "nothing was accepted for the dead token")
                // The deep link, made per match, on every message of both.
                #expect(fcmServer.messages.allSatisfy { $0.data["mc_link"] == "scores://match/football?from=push" })
                let links = pushService.delivered.filter { $0.subscriberId == browserC.id }
                    .map { ($0.json?["data"] as? [String: Any])?["link"] as? String }
                #expect(!links.isEmpty && links.allSatisfy { $0 == "scores://match/football?from=push" }, "\(links)")
                #expect(pushService.log.filter { $0.subscriberId == browserD.id }.map(\.status) == [410], "one push, then nothing")
                for device in [b, d] {
                    #expect(await store.activity(id: activity[device.deviceId]!)?.phase != .active, "no longer on a screen")
                    let refusals = await store.tokenRefusals(deviceId: device.deviceId)
                    #expect(refusals.count == 1 && refusals.first?.kind == .pushToStart, "\(refusals)")
                }
                #expect(await store.tokenRefusals(deviceId: b.deviceId).first?.reason.hasPrefix("fcm:") == true)
                #expect(await store.tokenRefusals(deviceId: d.deviceId).first?.reason == "webpush:HTTP 410")

                // The device's diagnostics show FCM's last answer about its token, and that nothing needs attention.
                let diagnosis = try await service.diagnostics(deviceId: a.deviceId)
                #expect(diagnosis.pushToStartToken?.lastAnswer?.status == 200, "\(String(describing: diagnosis.pushToStartToken))")
                #expect(diagnosis.pushToStartToken?.token == "fcm:toke…aaaa")
                let webDiagnosis = try await service.diagnostics(deviceId: c.deviceId)
                #expect(webDiagnosis.pushToStartToken?.token == "webpush:\(pushService.origin)/…")
                #expect(webDiagnosis.pushToStartToken?.lastAnswer == nil, "the Web Push sink keeps no answers per subscription")
                let text = DevicesCommand.Inspect.text(diagnosis)
                #expect(text.contains("address fcm:toke…aaaa, set ") && text.contains("FCM last answered 200"), "\(text)")
                #expect(diagnosis.attention.isEmpty && diagnosis.activities.allSatisfy(\.attention.isEmpty), "\(diagnosis.attention)")
                // A server with these two sinks takes FCM tokens and subscriptions, not APNs tokens' deliveries.
                #expect(!built.contains { $0.takes(.updateToken) } && built.contains { $0.takes(.fcmToken) })

                }
            }
        }
    }
}
