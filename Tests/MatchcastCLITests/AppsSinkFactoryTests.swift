import Foundation
@testable import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

/// `serve`'s sinks with apps configured, as `serve` builds them (file and flags → configuration → `SinkFactory`): a push
/// service's sink becomes one `AppRoutedSink` named after it, with a route per app (the default app first), each
/// route's topic its app's and its sink built from that app's own settings (inherited where the app sets none), its
/// metrics labelled with the app; other sinks are as they were; an app's unreadable file is refused naming the app.
@Suite("serve: the sinks of several apps", .serialized)
struct AppsSinkFactoryTests {
    /// Dead-letter recorders by sink name, one each, and every name asked for.
    final class DeadLetterBook: Sendable {
        private let state = Mutex<(recorders: [String: InMemoryDeadLetters], asked: [String])>(([:], []))

        func recorder(_ name: String) -> any DeadLetterRecorder {
            state.withLock { state in
                state.asked.append(name)
                if let known = state.recorders[name] { return known }
                let made = InMemoryDeadLetters()
                state.recorders[name] = made
                return made
            }
        }

        subscript(name: String) -> InMemoryDeadLetters? { state.withLock { $0.recorders[name] } }
        var asked: [String] { state.withLock { $0.asked } }
    }

    /// Service account files in `folder`: the default app's (project `scores-prod`) and fantasy's (the fake's project).
    static func accounts(in folder: URL, tokenURI: String) throws -> (scores: String, fantasy: String) {
        let scores = folder.appendingPathComponent("scores.json"), fantasy = folder.appendingPathComponent("fantasy.json")
        try FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: tokenURI, changes: ["project_id": "scores-prod"]).write(to: scores)
        try FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: tokenURI).write(to: fantasy)
        return (scores.path, fantasy.path)
    }

    /// A file with the default app's bundle id and the apps `fantasy` (its own service account) and `kids` (none).
    static func configFile(in folder: URL, fantasyAccount: String) throws -> String {
        let file = folder.appendingPathComponent("apps.yaml")
        try Data("""
            bundleId: com.example.scores
            apps:
              - id: fantasy
                bundleId: com.example.fantasy
                fcm:
                  serviceAccountFile: \(fantasyAccount)
              - id: kids
                bundleId: com.example.kids

            """.utf8).write(to: file)
        return file.path
    }

    @Test("--sink stdout --sink fcm with apps: stdout as ever, and one routed fcm sink with a route per app, each its own")
    func routedFCM() async throws {
        try await FCMFixture.withServer { server, client in
            let folder = try ScratchFolder.newFolder("apps-sinks")
            defer { try? FileManager.default.removeItem(at: folder) }
            let accounts = try Self.accounts(in: folder, tokenURI: server.tokenURI)
            let file = try Self.configFile(in: folder, fantasyAccount: accounts.fantasy)
            let configuration = try ServeCommand.parse([
                "--config", file, "--sink", "stdout", "--sink", "fcm", "--fcm-service-account", accounts.scores,
                "--fcm-endpoint", server.url,
            ]).loadConfiguration(environment: [:])
            #expect(configuration.apps.map(\.id) == ["fantasy", "kids"])

            var factory = SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
            factory.routesByTarget = true
            let metrics = RecordingMetrics()
            factory.metricsFactory = metrics
            let book = DeadLetterBook()
            let sinks = try factory.makeSinks(deadLetters: book.recorder, onInvalidToken: { _, _ in })
            defer { SinkFactory.shutdown(sinks) }

            #expect(sinks.map(\.name) == ["stdout", "fcm"])
            #expect(sinks.first is StdoutSink)
            let routed = try #require(sinks.last as? AppRoutedSink)
            #expect(routed.routes.map(\.appId) == ["default", "fantasy", "kids"])
            #expect(routed.routes.map(\.topic) == [
                "com.example.scores.push-type.liveactivity", "com.example.fantasy.push-type.liveactivity",
                "com.example.kids.push-type.liveactivity",
            ])
            let fcmSinks = routed.routes.compactMap { $0.sink as? FCMSink }
            #expect(fcmSinks.count == 3)
            // Each app's own credentials: fantasy's file, and the top level's for the default app and for kids.
            #expect(fcmSinks.map(\.account.projectId) == ["scores-prod", "matchcast-test", "scores-prod"])
            #expect(fcmSinks.map(\.configuration.serviceAccount) == [.file(accounts.scores), .file(accounts.fantasy), .file(accounts.scores)])
            #expect(fcmSinks.allSatisfy { $0.configuration.recipient == .deliveryTargets && $0.configuration.endpoint == server.url })
            #expect(Set(book.asked) == ["fcm"], "the routed sink and each app's keep their dead letters as fcm's")

            let fantasyTopic = "com.example.fantasy.push-type.liveactivity"
            #expect(routed.takes(.fcmToken, topic: fantasyTopic))
            #expect(!routed.takes(.updateToken, topic: fantasyTopic), "an FCM sink takes no APNs token")
            #expect(!routed.takes(.fcmToken, topic: "com.example.removed.push-type.liveactivity"))

            // A fantasy device's push leaves through fantasy's sink (the fake knows fantasy's project only), counted
            // with app=fantasy; a push of an app no longer configured is dead-lettered, unsent.
            let match = FCMFixture.FootballMatch(timestamp: Int(Date().timeIntervalSince1970))
            var push = match.update
            push.target = PushTarget(kind: .fcmToken, value: FCMFixture.registrationToken)
            push.apns.topic = fantasyTopic
            var stray = match.goal
            stray.target = PushTarget(kind: .fcmToken, value: FCMFixture.registrationToken)
            stray.apns.topic = "com.example.removed.push-type.liveactivity"
            try await routed.deliver([push, stray])
            #expect(server.messages.map(\.token) == [FCMFixture.registrationToken])
            let delivered = [("sink", "fcm"), ("outcome", "delivered")]
            #expect(metrics.counter("matchcast_deliveries_total", delivered + [("app", "fantasy")]) == 1)
            #expect(metrics.counter("matchcast_deliveries_total", delivered + [("app", "default")]) == 0)
            #expect(metrics.counter("matchcast_deliveries_total", delivered) == 0, "an app's sink counts with its app")
            #expect(await book["fcm"]?.deliveries.map(\.id) == [stray.id])
        }
    }

    @Test("an app's unreadable service account file is refused naming the app's key; without apps, a plain FCM sink")
    func badAppFileAndNoApps() async throws {
        try await FCMFixture.withServer { server, client in
            let folder = try ScratchFolder.newFolder("apps-sinks")
            defer { try? FileManager.default.removeItem(at: folder) }
            let accounts = try Self.accounts(in: folder, tokenURI: server.tokenURI)
            let bad = folder.appendingPathComponent("bad.json")
            try FCMFixture.serviceAccountJSON(tokenURI: server.tokenURI, changes: ["client_email": NSNull()]).write(to: bad)
            let file = try Self.configFile(in: folder, fantasyAccount: bad.path)
            let flags = ["--sink", "fcm", "--fcm-service-account", accounts.scores, "--fcm-endpoint", server.url]
            let configuration = try ServeCommand.parse(["--config", file] + flags).loadConfiguration(environment: [:])
            var factory = SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
            factory.routesByTarget = true
            let error = try #require(throws: ConfigurationError.self) {
                try factory.makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
            }
            #expect(error.key == "apps.fantasy.fcm.serviceAccountFile", "\(error)")

            let single = try ServeCommand.parse(flags).loadConfiguration(environment: [:])
            var plainFactory = SinkFactory(configuration: single, client: client, logger: ServeAPNsTests.quiet)
            plainFactory.routesByTarget = true
            let sinks = try plainFactory.makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
            defer { SinkFactory.shutdown(sinks) }
            #expect(sinks.count == 1 && sinks.first is FCMSink)
        }
    }
}
