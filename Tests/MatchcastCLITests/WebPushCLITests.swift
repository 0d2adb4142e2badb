import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
@testable import MatchcastCLI
import MatchcastDelivery
import MatchcastTesting
import Testing

/// Issue 20: `--sink webpush` sends a match to one browser subscription from `follow` and `replay`, through the same
/// flags, keys and variables as the other sinks, against the fake push service (VAPID checked, every push decrypted
/// with the browser's key). `serve` refuses it.
@Suite("follow and replay --sink webpush: a match in one browser, through the fake push service", .serialized)
struct WebPushCLITests {
    static let subject = "mailto:push@example.com"

    /// A folder with a VAPID key file and the subscription file of a new subscriber of `service`, and the flags naming them.
    static func setUp(_ service: FakePushService) throws -> (subscriber: FakePushService.Subscriber, folder: URL, flags: [String]) {
        let folder = try ScratchFolder.newFolder("webpush-cli")
        let pair = VAPIDCredentials.makeKeyPair()
        let keyFile = folder.appendingPathComponent("vapid.pem")
        try Data(pair.privateKeyPEM.utf8).write(to: keyFile)
        let subscriber = service.subscribe(applicationServerKey: pair.publicKey)
        let subscriptionFile = try subscriber.writeJSON(in: folder)
        return (subscriber, folder, [
            "--sink", "webpush", "--webpush-subscription", subscriptionFile, "--vapid-key-file", keyFile.path,
            "--vapid-subject", subject,
        ])
    }

    static func event(_ message: [String: Any]) -> String? { (message["data"] as? [String: Any])?["event"] as? String }

    /// What every message of a match must be, whatever the run: well-formed, the match's tag and topic, one title
    /// (the start's full names kept for every update), start first and end last, in time order.
    static func expectAMatch(_ service: FakePushService, matchId: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(service.log.allSatisfy { $0.problems.isEmpty }, "\(service.log.map(\.problems))", sourceLocation: sourceLocation)
        let pushes = service.delivered
        let messages = pushes.compactMap(\.json)
        try #require(messages.count == pushes.count && messages.count >= 2, "\(messages.count) messages", sourceLocation: sourceLocation)
        #expect(Self.event(messages[0]) == "start" && Self.event(messages[messages.count - 1]) == "end",
                "\(messages.map(Self.event))", sourceLocation: sourceLocation)
        #expect(messages.filter { Self.event($0) == "end" }.count == 1, sourceLocation: sourceLocation)
        #expect(Set(messages.compactMap { $0["title"] as? String }).count == 1, "one title throughout", sourceLocation: sourceLocation)
        #expect(messages.allSatisfy { $0["tag"] as? String == "mc-\(matchId)" }, sourceLocation: sourceLocation)
        #expect(pushes.allSatisfy { $0.topic == WebPushMessage.topic(forMatch: matchId) }, sourceLocation: sourceLocation)
        #expect(pushes.first?.urgency == "high" && pushes.last?.urgency == "high", sourceLocation: sourceLocation)
        #expect(pushes.last?.ttl == "28800", sourceLocation: sourceLocation)
        let times = messages.compactMap { ($0["data"] as? [String: Any])?["ts"] as? Int }
        #expect(times == times.sorted(), "in order", sourceLocation: sourceLocation)
    }

    @Test("follow --sink webpush: every push of a match reaches the browser, and follow exits 0 at full time", .timeLimit(.minutes(2)))
    func followToTheEnd() async throws {
        let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
        try await FakePushService.with { service in
            let (subscriber, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            let result = try await MatchcastProcess.run(binary, ["follow", "football", "--feed", "fake?speed=600"] + flags)
            #expect(result.status == 0, "stderr:\n\(result.stderr)")
            try Self.expectAMatch(service, matchId: "football")
            let final = try #require(service.deliveredMessages.last?["data"] as? [String: Any])
            #expect(final["final"] as? Bool == true)
            #expect(!result.stderr.contains(subscriber.id), "the endpoint's path never shows")
        }
    }

    @Test("Ctrl-C mid-match sends the end that releases the browser's notification", .timeLimit(.minutes(2)))
    func ctrlC() async throws {
        try await FakePushService.with { service in
            let (_, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            // 60x: kick-off after two seconds, full time after two minutes.
            let follow = try FollowPhoneTests.Follow(["football", "--feed", "fake?speed=60"] + flags, folder: folder)
            try await FollowPhoneTests.waitUntil("the start to reach the browser") {
                service.deliveredMessages.contains { Self.event($0) == "start" }
            }
            follow.interrupt()
            #expect(try await follow.exitStatus() == 0, "stderr:\n\(follow.stderr)")
            let last = try #require(service.deliveredMessages.last)
            #expect(Self.event(last) == "end")
            #expect((last["data"] as? [String: Any])?["final"] as? Bool == false, "ended early: the worker closes it")
            #expect(follow.stderr.contains("the browser's notification was ended"), "\(follow.stderr)")
        }
    }

    @Test("a subscription the push service calls gone stops follow with exit 1 and a clear message", .timeLimit(.minutes(2)))
    func goneSubscription() async throws {
        let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
        try await FakePushService.with { service in
            let (subscriber, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            service.script([.created, .gone(410)])
            let started = ContinuousClock.now
            // 30x: the match would last four minutes; follow must stop at the 410, long before.
            let result = try await MatchcastProcess.run(binary, ["follow", "football", "--feed", "fake?speed=30"] + flags)
            #expect(result.status == 1, "stderr:\n\(result.stderr)")
            #expect(ContinuousClock.now - started < .seconds(90))
            #expect(result.stderr.contains("answered 410: the browser subscription is gone"), "\(result.stderr)")
            #expect(result.stderr.contains(service.origin) && !result.stderr.contains(subscriber.id))
            #expect(service.log.map(\.status) == [201, 410], "nothing is sent after the 410")
        }
    }

    @Test("replay --sink webpush: a recorded match reaches the browser, start to end", .timeLimit(.minutes(2)))
    func replay() async throws {
        try await FakePushService.with { service in
            let (_, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await ReplayCommand.parse([ReplayAPNsTests.goldenRecording.path, "--fast"] + flags).run()
            let matchId = try #require((service.deliveredMessages.first?["data"] as? [String: Any])?["match"] as? String)
            try Self.expectAMatch(service, matchId: matchId)
        }
    }

    @Test("replay to a subscription the browser left fails with exit 1 after one push", .timeLimit(.minutes(2)))
    func replayToAGoneSubscription() async throws {
        try await FakePushService.with { service in
            let (subscriber, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            service.unsubscribe(subscriber)
            do {
                try await ReplayCommand.parse([ReplayAPNsTests.goldenRecording.path, "--fast"] + flags).run()
                Issue.record("replay succeeded with a gone subscription")
            } catch let exit as ExitCode {
                #expect(exit.rawValue == 1)
            }
            #expect(service.log.map(\.status) == [410], "nothing is sent after the 410")
        }
    }

    @Test("the flags, keys and variables of --sink webpush mean the same to follow and replay; serve takes it without a subscription file")
    func configuration() async throws {
        try await FakePushService.with { service in
            let (_, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            let subscriptionFile = flags[3], keyFile = flags[5]
            let environment = [
                "MATCHCAST_SINKS": "webpush", "MATCHCAST_WEBPUSH_SUBSCRIPTION_FILE": subscriptionFile,
                "MATCHCAST_WEBPUSH_VAPID_KEY_FILE": keyFile, "MATCHCAST_WEBPUSH_VAPID_SUBJECT": Self.subject,
            ]
            let file = folder.appendingPathComponent("config.yaml")
            try Data("""
                sinks: [webpush]
                webpush:
                  subscriptionFile: \(subscriptionFile)
                  vapidKeyFile: \(keyFile)
                  vapidSubject: "\(Self.subject)"

                """.utf8).write(to: file)
            for command in ["follow", "replay"] {
                let made = [
                    try SinkOptionsTests.configuration(command, flags),
                    try SinkOptionsTests.configuration(command, [], environment: environment),
                    try SinkOptionsTests.configuration(command, ["--config", file.path]),
                ]
                for configuration in made {
                    #expect(configuration.sinks == ["webpush"])
                    #expect(configuration.webPush.subscriptionFile == subscriptionFile && configuration.webPush.vapidKeyFile == keyFile)
                    #expect(configuration.webPush.vapidSubject == Self.subject)
                    try await ServeAPNsTests.withClient { client in
                        let sinks = try SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
                            .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
                        defer { SinkFactory.shutdown(sinks) }
                        let sink = try #require(sinks.first as? WebPushSink)
                        guard case .subscription(let subscription) = sink.configuration.recipient else {
                            Issue.record("follow and replay send to the configured subscription")
                            return
                        }
                        #expect(subscription.origin == service.origin && !sink.configuration.waitsForSends)
                        #expect(sink.configuration.vapid.subject == Self.subject)
                    }
                }
            }
            // serve sends to the subscriptions browsers register: one subscription file is refused, and none is needed.
            for arguments in [flags, []] {
                #expect {
                    _ = try SinkOptionsTests.configuration("serve", arguments, environment: arguments.isEmpty ? environment : [:])
                } throws: { error in
                    guard let error = error as? ConfigurationError else { return false }
                    let line = SinkOptions.message(error)
                    return line.hasPrefix("--webpush-subscription (webpush.subscriptionFile): serve sends each message to the subscription its browser registered")
                        && !line.contains("\n")
                }
            }
            let serving = try SinkOptionsTests.configuration("serve", Array(flags.prefix(2)) + Array(flags.dropFirst(4)))
            #expect(serving.sinks == ["webpush"] && serving.webPush.subscriptionFile.isEmpty)
            try await ServeAPNsTests.withClient { client in
                var factory = SinkFactory(configuration: serving, client: client, logger: ServeAPNsTests.quiet)
                factory.routesByTarget = true
                let sinks = try factory.makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
                defer { SinkFactory.shutdown(sinks) }
                let sink = try #require(sinks.first as? WebPushSink)
                guard case .deliveryTargets = sink.configuration.recipient else {
                    Issue.record("serve's webpush sink sends to each delivery's subscription")
                    return
                }
                #expect(sink.configuration.waitsForSends)
            }
        }
    }

    @Test("a missing flag, a bad subscription file, a bad key or subject: one line naming the flag, exit code 2")
    func badInput() async throws {
        try await FakePushService.with { service in
            let (_, folder, flags) = try Self.setUp(service)
            defer { try? FileManager.default.removeItem(at: folder) }
            func write(_ name: String, _ text: String) throws -> String {
                let url = folder.appendingPathComponent(name)
                try Data(text.utf8).write(to: url)
                return url.path
            }
            func replacing(_ flag: String, with value: String) -> [String] {
                var changed = flags
                changed[changed.firstIndex(of: flag)! + 1] = value
                return changed
            }
            var remote = try #require(try JSONSerialization.jsonObject(with: service.subscribe().json) as? [String: Any])
            remote["endpoint"] = "http://push.example.net/push/abc"
            let httpFile = try write("http.json", String(decoding: try JSONSerialization.data(withJSONObject: remote), as: UTF8.self))
            let cases: [(arguments: [String], flag: String, says: String)] = [
                (Array(flags.prefix(2)), "--webpush-subscription", "needs the browser's subscription file"),
                (Array(flags.prefix(4)), "--vapid-key-file", "needs the VAPID private key file"),
                (Array(flags.prefix(6)), "--vapid-subject", "needs a VAPID contact"),
                (replacing("--webpush-subscription", with: try write("bad.json", "{\"endpoint\": 1}")), "--webpush-subscription", "no \"endpoint\""),
                (replacing("--webpush-subscription", with: httpFile), "--webpush-subscription", "must be https"),
                (replacing("--webpush-subscription", with: folder.appendingPathComponent("none.json").path), "--webpush-subscription", "cannot read"),
                (replacing("--vapid-key-file", with: try write("key.pem", P384.Signing.PrivateKey().pemRepresentation)), "--vapid-key-file", "not a P-256"),
                (replacing("--vapid-subject", with: "push@example.com"), "--vapid-subject", "mailto: or https:"),
            ]
            for (arguments, flag, says) in cases {
                let line: String? = try await WebhookFixture.withClient { client -> String? in
                    do {
                        let configuration = try SinkOptionsTests.configuration("follow", arguments)
                        _ = try SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
                            .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
                        return nil
                    } catch let error as ConfigurationError {
                        return SinkOptions.message(error)
                    }
                }
                let message = try #require(line, "\(flag): accepted")
                #expect(message.hasPrefix(flag + " ") && message.contains(says) && !message.contains("\n"), "\(message)")
            }
            // Run for real: follow exits 2 before polling.
            do {
                try await FollowCommand.parse(["football", "--feed", "fake?speed=1000"] + replacing("--vapid-subject", with: "nobody")).run()
                Issue.record("follow ran with a bad VAPID subject")
            } catch let exit as ExitCode {
                #expect(exit.rawValue == 2)
            }
        }
    }

    @Test("webpush-keys writes a private key only its owner reads and prints the public key; it never overwrites one")
    func keys() async throws {
        let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
        let folder = try ScratchFolder.newFolder("webpush-keys")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("vapid.pem").path
        let made = try await MatchcastProcess.run(binary, ["webpush-keys", "--private-key-file", file])
        #expect(made.status == 0, "\(made.stderr)")
        let publicKey = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let loaded = try VAPIDCredentials.load(keyFile: file, subject: Self.subject)
        #expect(loaded.publicKey == publicKey && Base64URL.decode(publicKey)?.count == 65)
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let again = try await MatchcastProcess.run(binary, ["webpush-keys", "--private-key-file", file])
        #expect(again.status == 0 && again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == publicKey)
        #expect(again.stderr.contains("exists and was kept"))
        #expect(try VAPIDCredentials.load(keyFile: file, subject: Self.subject).publicKey == publicKey)
    }

    @Test("web push dead letters are explained in one line")
    func refusalsExplained() {
        #expect(WebPushRefusal.explain(status: 403, body: "").contains("applicationServerKey"))
        #expect(WebPushRefusal.explain(status: 413, body: "{}").contains("too large"))
        #expect(WebPushRefusal.explain(status: 503, body: "gave up").contains("retried"))
        #expect(WebPushRefusal.explain(status: 0, body: "gave up after 5 attempts; last: timeout") == "gave up after 5 attempts; last: timeout")
        for status in [0, 400, 401, 404, 410, 413, 429, 500] {
            #expect(!WebPushRefusal.explain(status: status, body: "x").contains("\n"))
        }
    }
}
