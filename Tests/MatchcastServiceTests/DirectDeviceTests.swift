import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

private typealias F = ManagerFixtures

/// Issue 20, the broker's side: Android devices register an FCM token and browsers a Web Push subscription, follow
/// like iOS devices, and get their start, updates and end at that address: start = the first message, no token to
/// wait for. Run on every store, with the real FCM sink (routed by each delivery's target) against the fake FCM.
@Suite("Android and web devices: registered addresses, started, updated and ended through them")
struct DirectDeviceTests {
    /// The stores the broker runs on: memory, a SQLite file, and PostgreSQL when `MATCHCAST_POSTGRES_URL` is set.
    enum Store: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory, sqlite, postgres

        static var available: [Store] { ScratchPostgresDatabase.isConfigured ? allCases : [.memory, .sqlite] }
        var testDescription: String { rawValue }

        func with(_ body: (any MatchcastStore) async throws -> Void) async throws {
            switch self {
            case .memory:
                try await body(InMemoryStore())
            case .sqlite:
                let folder = try ScratchFolder.newFolder("direct-devices")
                defer { try? FileManager.default.removeItem(at: folder) }
                let store = try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path)
                try await body(store)
                try store.close()
            case .postgres:
                let database = try await ScratchPostgresDatabase.create()
                do {
                    let store = try await StoreURL(database.url).makeStore()
                    try await withStoreRunning(store) { try await body(store) }
                } catch {
                    try? await database.drop()
                    throw error
                }
                try await database.drop()
            }
        }
    }

    static let goal = MatchEvent(id: "g1", type: "goal", text: "GOAL! Saka 31'")

    @Test("an iOS, an Android and a web device follow one match: each start, update and end goes to its own address",
          arguments: Store.available)
    func threePlatforms(store kind: Store) async throws {
        try await kind.with { store in
            try await FCMFixture.withServer { server, client in
                let fcm = try FCMFixture.sink(server: server, client: client, recipient: .deliveryTargets)
                let h = ManagerHarness(store: store, besides: [fcm])
                try await h.ingest(F.football("m", .scheduled, period: nil, clock: nil))
                let ios = try await h.device(pushToStart: F.pushToStart(1))
                let android = try await h.device()
                try await h.service.setFCMToken(deviceId: android, token: FCMFixture.registrationToken)
                let browser = FakePushService.Subscriber.unattached()
                let web = try await h.device()
                try await h.service.setWebPushSubscription(deviceId: web, json: browser.json)
                // The census counts each kind apart (matchcast_tokens{kind}).
                let census = try await store.census()
                #expect(census.pushToStartTokens == 1 && census.fcmTokens == 1 && census.webPushSubscriptions == 1, "\(census)")
                var activity: [String: String] = [:]
                for device in [ios, android, web] {
                    let id: String = try #require(try await h.service.follow(deviceId: device, matchId: "m").activityId)
                    activity[device] = id
                }

                // Kick-off: three starts, each to its device's address.
                try await h.ingest(F.football("m"))
                let starts = Dictionary(uniqueKeysWithValues: h.deliveries(.start).map { ($0.activityId, $0.target) })
                #expect(starts.count == 3)
                // Android's and the browser's activities are active on their addresses; none is an iPhone's update token.
                #expect(try await store.census().updateTokens == 0)
                #expect(starts[activity[ios]!] == PushTarget(kind: .pushToStartToken, value: F.pushToStart(1)))
                #expect(starts[activity[android]!] == PushTarget(kind: .fcmToken, value: FCMFixture.registrationToken))
                let webTarget = try #require(starts[activity[web]!])
                #expect(webTarget.kind == .webPushSubscription)
                let subscription = try WebPushMessage.Subscription(json: Data(webTarget.value.utf8))
                #expect(subscription.endpoint == browser.endpoint && subscription.auth == browser.auth)
                // No token to wait for: the Android and web activities are active at once; the iOS one waits for its.
                let states = try await [ios, android, web].asyncMap { try await h.service.follows(deviceId: $0).first?.activityState }
                #expect(states == ["starting", "active", "active"])
                _ = try await h.service.putActivity(
                    activityId: activity[ios]!, deviceId: ios, matchId: "m", updateToken: F.update(1), environment: .production)

                // A goal: one update each, to the same addresses.
                let mark = h.deliveries.count
                try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
                let updates = Dictionary(uniqueKeysWithValues: h.deliveries(.update, since: mark).map { ($0.activityId, $0.target) })
                #expect(updates[activity[ios]!] == PushTarget(kind: .updateToken, value: F.update(1)))
                #expect(updates[activity[android]!] == PushTarget(kind: .fcmToken, value: FCMFixture.registrationToken))
                #expect(updates[activity[web]!] == webTarget)

                // Full time: one end each.
                let beforeEnd = h.deliveries.count
                try await h.ingest(F.football("m", .completed, home: 1, period: "FT", clock: nil, events: [Self.goal]))
                let ends = h.deliveries(.end, since: beforeEnd)
                #expect(Set(ends.map(\.activityId)) == Set(activity.values))
                #expect(ends.first { $0.activityId == activity[android]! }?.target.kind == .fcmToken)

                // The fake FCM got the Android device's three messages and nothing meant for the others.
                #expect(server.problems.isEmpty, "\(server.problems)")
                let messages = server.messages
                #expect(messages.map { $0.data["mc_event"] ?? "?" } == ["start", "update", "end"])
                #expect(messages.allSatisfy { $0.token == FCMFixture.registrationToken && $0.collapseKey == "mc-m" })
                #expect(messages.last?.data["mc_final"] == "1")
            }
        }
    }

    @Test("a new FCM token moves the started activity to it; a dead one takes it back to waiting, and the next token starts it again",
          arguments: Store.available)
    func rotationAndDeath(store kind: Store) async throws {
        try await kind.with { store in
            let h = ManagerHarness(store: store)
            let (first, second, third) = ("tokA:" + String(repeating: "a", count: 40), "tokB:" + String(repeating: "b", count: 40),
                                          "tokC:" + String(repeating: "c", count: 40))
            try await h.ingest(F.football("m"))
            let device = try await h.device()
            try await h.service.setFCMToken(deviceId: device, token: first)
            let activityId = try #require(try await h.service.follow(deviceId: device, matchId: "m").activityId)
            #expect(h.deliveries(.start).map(\.target) == [PushTarget(kind: .fcmToken, value: first)])

            // The app's token rotates: the next update goes to the new one.
            try await h.service.setFCMToken(deviceId: device, token: second)
            #expect(try await store.census().fcmTokens == 1, "replaced, not added")
            var mark = h.deliveries.count
            try await h.ingest(F.football("m", home: 1, clock: "31'", events: [Self.goal]))
            #expect(h.deliveries(.update, since: mark).map(\.target) == [PushTarget(kind: .fcmToken, value: second)])
            // The old token reported dead now touches nothing: the device has moved on.
            #expect(try await h.service.reportDeadToken(DirectAddress.fcm(first).stored, reason: "fcm:UNREGISTERED") == false)
            #expect(try await h.service.follows(deviceId: device).first?.activityState == "active")

            // The current one dies: the activity is off the screen, waits, and nothing more is sent.
            #expect(try await h.service.reportDeadToken(DirectAddress.fcm(second).stored, reason: "fcm:UNREGISTERED"))
            #expect(try await h.service.follows(deviceId: device).first?.activityState == "waiting")
            #expect(try await store.pushToStartToken(deviceId: device) == nil)
            #expect(try await store.census().fcmTokens == 0)
            mark = h.deliveries.count
            try await h.ingest(F.football("m", home: 2, clock: "55'", events: [Self.goal, MatchEvent(id: "g2", type: "goal", text: "GOAL!")]))
            #expect(h.deliveries(since: mark).isEmpty)

            // The app comes back with a token: the same activity starts afresh there.
            try await h.service.setFCMToken(deviceId: device, token: third)
            let restarted = h.deliveries(since: mark)
            #expect(restarted.map(\.payload.aps.event) == [.start])
            #expect(restarted.first?.target == PushTarget(kind: .fcmToken, value: third))
            #expect(restarted.first?.activityId == activityId)
            #expect(try await h.service.follows(deviceId: device).first?.activityState == "active")
        }
    }

    @Test("past Apple's 8-hour limit an iPhone's activity restarts; an Android device's stays up, refreshed")
    func noEightHourLimit() async throws {
        let h = ManagerHarness()
        try await h.ingest(F.football("m"))
        let (_, iosActivity) = try await h.activeDevice(matchId: "m", pushToStart: F.pushToStart(1), updateToken: F.update(1))
        let android = try await h.device()
        try await h.service.setFCMToken(deviceId: android, token: FCMFixture.registrationToken)
        let androidActivity = try #require(try await h.service.follow(deviceId: android, matchId: "m").activityId)
        // Nine hours of a quiet match, polled (unchanged) and ticked every ten minutes.
        let mark = h.deliveries.count
        for _ in 0..<54 {
            h.clock.advance(by: 600)
            try await h.ingest(F.football("m"))
            try await h.tick()
        }
        let later = h.deliveries(since: mark)
        #expect(later.contains { $0.activityId == iosActivity && $0.payload.aps.event == .end }, "the iPhone's ended near 8 h")
        #expect(later.contains { $0.activityId != iosActivity && $0.activityId != androidActivity && $0.payload.aps.event == .start },
                "and a fresh one started")
        let toAndroid = later.filter { $0.activityId == androidActivity }
        #expect(!toAndroid.isEmpty && toAndroid.allSatisfy { $0.payload.aps.event == .update }, "refreshed, never ended")
        #expect(try await h.service.follows(deviceId: android).first?.activityId == androidActivity)
    }

    @Test("a bad FCM token or subscription is refused as invalid_request, and nothing is stored")
    func validation() async throws {
        let h = ManagerHarness()
        let device = try await h.device()
        for token in ["", "has space", String(repeating: "x", count: 4097), "emoji🙂"] {
            await #expect(throws: ServiceError.self) { try await h.service.setFCMToken(deviceId: device, token: token) }
        }
        let browser = FakePushService.Subscriber.unattached(endpoint: URL(string: "http://push.example.com/p/1")!)
        do {
            try await h.service.setWebPushSubscription(deviceId: device, json: browser.json)
            Issue.record("an http endpoint off this machine was taken")
        } catch {
            #expect(error.code == .invalidRequest && error.message.contains("https"), "\(error)")
        }
        #expect(try await h.store.pushToStartToken(deviceId: device) == nil)
    }

    @Test("a server whose sinks reach only APNs refuses an FCM token and a subscription, saying which sink it lacks")
    func noSinkForTheAddress() async throws {
        let h = ManagerHarness(sinksTake: { $0.isAPNs })
        let device = try await h.device()
        do {
            try await h.service.setFCMToken(deviceId: device, token: FCMFixture.registrationToken)
            Issue.record("an FCM token was taken with no sink to send to it")
        } catch {
            #expect(error.code == .invalidRequest && error.message.contains("without the fcm sink"), "\(error)")
        }
        do {
            try await h.service.setWebPushSubscription(deviceId: device, json: FakePushService.Subscriber.unattached().json)
            Issue.record("a subscription was taken with no sink to send to it")
        } catch {
            #expect(error.code == .invalidRequest && error.message.contains("without the webpush sink"), "\(error)")
        }
        #expect(try await h.store.pushToStartToken(deviceId: device) == nil)
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
