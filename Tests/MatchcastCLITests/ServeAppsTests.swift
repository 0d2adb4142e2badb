import AsyncHTTPClient
import Crypto
import Foundation
@testable import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Prometheus
import ServiceLifecycle
import Testing

/// Issue 20's several apps per deployment, through `serve`'s own wiring: a configuration file with the default app at
/// the top level and a second app in `apps:`, each with its own APNs key (and APNs server), its own Firebase project
/// (and FCM server) and its own VAPID key; the sinks built as `serve` builds them; a broker on the fake feed. Each app
/// has an iPhone, an Android phone and a browser following the same match.
@Suite("serve: two apps in one deployment, each device reached through its own app's credentials", .serialized)
struct ServeAppsTests {
    static let fantasyKeyId = "XYZ987WVUT"
    static let fantasyProject = "fantasy-test"
    static let fantasyEmail = "firebase-adminsdk-xy9@fantasy-test.iam.gserviceaccount.com"

    @Test("one match, six devices of two apps: each gets its start, updates and end through its own app's APNs key, Firebase project and VAPID key, and nothing crosses apps",
          .timeLimit(.minutes(5)))
    func twoApps() async throws {
        let (apnsKeyA, apnsKeyB) = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        try await APNsFixture.withServer(key: apnsKeyA) { apnsA, client in
            let apnsB = try await FakeAPNsServer.start(
                publicKey: apnsKeyB.publicKey, keyId: Self.fantasyKeyId, teamId: APNsFixture.teamId)
            try await withStopping(apnsB, stop: { await $0.stop() }) { apnsB in
                let fcmA = try await FakeFCMServer.start(
                    publicKey: FCMFixture.key.publicKey, clientEmail: FCMFixture.clientEmail, projectId: FCMFixture.projectId)
                try await withStopping(fcmA, stop: { await $0.stop() }) { fcmA in
                    try await FCMFixture.withOtherProject(projectId: Self.fantasyProject, clientEmail: Self.fantasyEmail) { fcmB, accountB in
                        try await FakePushService.with { pushService in
                            try await run(
                                apns: (apnsA, apnsKeyA, apnsB, apnsKeyB), fcm: (fcmA, fcmB, accountB), pushService: pushService,
                                client: client)
                        }
                    }
                }
            }
        }
    }

    private func run(
        apns: (a: FakeAPNsServer, keyA: P256.Signing.PrivateKey, b: FakeAPNsServer, keyB: P256.Signing.PrivateKey),
        fcm: (a: FakeFCMServer, b: FakeFCMServer, accountB: Data), pushService: FakePushService,
        client: HTTPClient
    ) async throws {
        let folder = try ScratchFolder.newFolder("serve-apps")
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ data: Data, _ name: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            try data.write(to: url)
            return url.path
        }
        let vapidA = VAPIDCredentials.makeKeyPair(), vapidB = VAPIDCredentials.makeKeyPair()
        let yaml = """
            sinks: [apns, fcm, webpush]
            bundleId: com.example.scores
            apns:
              keyFile: \(try write(Data(apns.keyA.pemRepresentation.utf8), "AuthKey_A.p8"))
              keyId: \(APNsFixture.keyId)
              teamId: \(APNsFixture.teamId)
              environment: sandbox
              endpoint: \(apns.a.url)
              caFile: \(try apns.a.certificates.writeCAFile(in: folder))
            fcm:
              serviceAccountFile: \(try write(FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: fcm.a.tokenURI), "scores.json"))
              endpoint: \(fcm.a.url)
            webpush:
              vapidKeyFile: \(try write(Data(vapidA.privateKeyPEM.utf8), "vapid-scores.pem"))
              vapidSubject: mailto:ops@example.com
            apps:
              - id: fantasy
                bundleId: com.example.fantasy
                adminKey: fantasy-admin-key
                apns:
                  keyFile: \(try write(Data(apns.keyB.pemRepresentation.utf8), "AuthKey_B.p8"))
                  keyId: \(Self.fantasyKeyId)
                  endpoint: \(apns.b.url)
                  caFile: \(try apns.b.certificates.writeCAFile(in: folder))
                fcm:
                  serviceAccountFile: \(try write(fcm.accountB, "fantasy.json"))
                  endpoint: \(fcm.b.url)
                webpush:
                  vapidKeyFile: \(try write(Data(vapidB.privateKeyPEM.utf8), "vapid-fantasy.pem"))
            """
        let configuration = try ServeCommand.parse(["--config", try write(Data(yaml.utf8), "matchcast.yaml")])
            .loadConfiguration(environment: [:])
        #expect(configuration.apps.map(\.id) == ["fantasy"])

        // Exactly as serve builds them, counting into a registry of this test's own.
        let registry = PrometheusCollectorRegistry()
        let relay = DeadTokenRelay()
        var factory = SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
        factory.routesByTarget = true
        factory.metricsFactory = PrometheusMetricsFactory(registry: registry)
        let deadLetters = InMemoryDeadLetters()
        let built = try factory.makeSinks(deadLetters: { _ in deadLetters }, deadTokens: relay)
        defer { SinkFactory.shutdown(built) }
        #expect(built.map(\.name) == ["apns", "fcm", "webpush"])
        #expect(built.allSatisfy { ($0 as? AppRoutedSink)?.routes.map(\.appId) == ["default", "fantasy"] })
        let sinks = built.map(InFlightSink.init)

        let rig = try FakeFeedBroker(
            sinks: sinks, deadTokens: relay,
            settings: BrokerSettings(
                bundleId: configuration.topicBundleId, activityPolicy: ActivityPolicy(coalesceInterval: .seconds(10)),
                pushToStartSpacing: .seconds(5), seed: 13, otherApps: configuration.apps.map(\.catalogEntry)))
        try await rig.run {
            let (clock, broker) = (rig.clock, rig.broker)
            let service = broker.service
            let idle: () async -> Bool = { await broker.relay.depth == 0 && sinks.allSatisfy(\.isIdle) }
            let idleness = ClockIdleness(clock: clock, floor: 4)

            // Each app: an iPhone, an Android phone and a browser (subscribed with its own app's VAPID key).
            struct Devices {
                var phone: DeviceRegistration, android: DeviceRegistration, browser: DeviceRegistration
                var startToken: String, fcmToken: String, subscriber: FakePushService.Subscriber
        }
        func devices(app: String?, tag: String, vapid: String) async throws -> Devices {
            let phone = try await service.registerDevice(app: app)
            let android = try await service.registerDevice(app: app)
            let browser = try await service.registerDevice(app: app)
            let startToken = String(repeating: tag + "1", count: 32)
            let fcmToken = "token\(tag):" + String(repeating: tag, count: 60)
            let subscriber = pushService.subscribe(applicationServerKey: vapid)
            try await service.setPushToStartToken(deviceId: phone.deviceId, token: startToken, environment: .sandbox)
            try await service.setFCMToken(deviceId: android.deviceId, token: fcmToken)
            try await service.setWebPushSubscription(deviceId: browser.deviceId, json: subscriber.json)
            for device in [phone, android, browser] {
                _ = try await service.follow(deviceId: device.deviceId, matchId: "football")
            }
            return Devices(
                phone: phone, android: android, browser: browser, startToken: startToken, fcmToken: fcmToken, subscriber: subscriber)
        }
        let scores = try await devices(app: nil, tag: "a", vapid: vapidA.publicKey)
        let fantasy = try await devices(app: "fantasy", tag: "b", vapid: vapidB.publicKey)
        #expect([fantasy.phone, fantasy.android, fantasy.browser].allSatisfy { $0.deviceId.hasPrefix("fantasy:dev_") })
        #expect([scores.phone, scores.android, scores.browser].allSatisfy { $0.deviceId.hasPrefix("dev_") })

        func events(_ server: FakeAPNsServer, tokens: Set<String>) -> [String] {
            server.accepted.filter { tokens.contains($0.token) }.compactMap(ServeAPNsTests.event)
        }
        func fcmEvents(_ server: FakeFCMServer, _ token: String) -> [String] {
            server.messages.filter { $0.token == token }.map { $0.data["mc_event"] ?? "?" }
        }
        func webEvents(_ subscriber: FakePushService.Subscriber) -> [String] {
            pushService.delivered.filter { $0.subscriberId == subscriber.id }
                .compactMap { ($0.json?["data"] as? [String: Any])?["event"] as? String }
        }
        func updateToken(_ app: Devices) -> String { app.startToken.replacingOccurrences(of: "1", with: "2") }

        // Kick-off: each iPhone's start goes out through its own app's APNs; the apps report the update tokens.
        try await ServeAPNsTests.drive(clock, idleness: idleness, idle: idle) {
            events(apns.a, tokens: [scores.startToken]) == ["start"] && events(apns.b, tokens: [fantasy.startToken]) == ["start"]
        }
        for app in [scores, fantasy] {
            let activity = try #require(try await service.follows(deviceId: app.phone.deviceId).first?.activityId)
            _ = try await service.putActivity(
                activityId: activity, deviceId: app.phone.deviceId, matchId: "football", updateToken: updateToken(app),
                environment: nil)
        }

        // The whole match, to its end on all six.
        try await ServeAPNsTests.drive(clock, idleness: idleness, idle: idle) {
            [scores, fantasy].allSatisfy { app in
                let server = app.fcmToken.hasPrefix("tokena") ? apns.a : apns.b
                let fcmServer = app.fcmToken.hasPrefix("tokena") ? fcm.a : fcm.b
                return events(server, tokens: [updateToken(app)]).last == "end"
                    && fcmEvents(fcmServer, app.fcmToken).last == "end" && webEvents(app.subscriber).last == "end"
            }
        }

        // Every request was signed with its server's own key (the fakes refuse any other) and nothing was refused.
        for server in [apns.a, apns.b] {
            #expect(server.log.allSatisfy { $0.status == 200 }, "\(server.log.filter { $0.status != 200 })")
        }
        #expect(fcm.a.problems.isEmpty && fcm.b.problems.isEmpty, "\(fcm.a.problems) \(fcm.b.problems)")
        let pushProblems = pushService.log.flatMap(\.problems)
        #expect(pushProblems.isEmpty, "every push's VAPID signature was its subscription's app's key: \(pushProblems)")

        // Nothing crossed: each app's APNs and FCM saw only its own devices' tokens and its own topic.
        #expect(Set(apns.a.accepted.map(\.token)) == [scores.startToken, updateToken(scores)])
        #expect(Set(apns.b.accepted.map(\.token)) == [fantasy.startToken, updateToken(fantasy)])
        #expect(apns.a.accepted.allSatisfy { $0.topic == "com.example.scores.push-type.liveactivity" })
        #expect(apns.b.accepted.allSatisfy { $0.topic == "com.example.fantasy.push-type.liveactivity" })
        #expect(Set(fcm.a.messages.map(\.token)) == [scores.fcmToken])
        #expect(Set(fcm.b.messages.map(\.token)) == [fantasy.fcmToken])
        #expect(Set(pushService.log.compactMap(\.subscriberId)) == [scores.subscriber.id, fantasy.subscriber.id])

        // Each device: one start first, one end last, updates between.
        for app in [scores, fantasy] {
            let server = app.fcmToken.hasPrefix("tokena") ? apns.a : apns.b
            let fcmServer = app.fcmToken.hasPrefix("tokena") ? fcm.a : fcm.b
            let phone = events(server, tokens: [app.startToken, updateToken(app)])
            for sequence in [phone, fcmEvents(fcmServer, app.fcmToken), webEvents(app.subscriber)] {
                #expect(sequence.first == "start" && sequence.filter { $0 == "start" }.count == 1, "\(sequence)")
                #expect(sequence.last == "end" && sequence.filter { $0 == "end" }.count == 1 && sequence.count >= 3, "\(sequence)")
            }
        }
        #expect(await deadLetters.deliveries.isEmpty)

        // The metrics carry the app.
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        let exposition = String(decoding: buffer, as: UTF8.self)
        for app in ["default", "fantasy"] {
            for sink in ["apns", "fcm", "webpush"] {
                let line = exposition.split(separator: "\n").first {
                    $0.hasPrefix("matchcast_deliveries_total{") && $0.contains("sink=\"\(sink)\"") && $0.contains("app=\"\(app)\"")
                        && $0.contains("outcome=\"delivered\"")
                }
                let count = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
                #expect(count >= 3, "\(sink) for \(app): \(line.map(String.init) ?? "no series")")
            }
        }

        }
    }
}
