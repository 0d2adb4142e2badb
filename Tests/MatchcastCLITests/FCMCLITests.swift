import ArgumentParser
import AsyncHTTPClient
import Foundation
@testable import MatchcastCLI
import MatchcastDelivery
import MatchcastTesting
import Testing

/// Issue 20: `--sink fcm` sends a match to one Android device from `follow` and `replay`, through the same flags, keys
/// and variables as the other sinks, against the fake FCM (the service account's assertion, the access token and every
/// message checked). `serve` takes it without a token: it sends to the tokens devices register.
@Suite("follow and replay --sink fcm: a match on one Android device, through the fake FCM", .serialized)
struct FCMCLITests {
    /// A folder with a service account key file whose token endpoint is `server`'s, and the flags naming it.
    static func setUp(_ server: FakeFCMServer) throws -> (folder: URL, flags: [String]) {
        let folder = try ScratchFolder.newFolder("fcm-cli")
        let file = folder.appendingPathComponent("service-account.json")
        try FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: server.tokenURI).write(to: file)
        return (folder, [
            "--sink", "fcm", "--fcm-service-account", file.path, "--fcm-token", FCMFixture.registrationToken,
            "--fcm-endpoint", server.url,
        ])
    }

    @Test("follow --sink fcm: the match's start, updates and end reach the device as data messages, and follow exits 0",
          .timeLimit(.minutes(2)))
    func followToTheEnd() async throws {
        let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
        try await FCMFixture.withServer { server, _ in
            let (folder, flags) = try Self.setUp(server)
            defer { try? FileManager.default.removeItem(at: folder) }
            let result = try await MatchcastProcess.run(binary, ["follow", "football", "--feed", "fake?speed=600"] + flags)
            #expect(result.status == 0, "stderr:\n\(result.stderr)")
            #expect(server.problems.isEmpty, "\(server.problems)")
            let messages = server.messages
            try #require(messages.count >= 2, "\(messages.count) messages")
            let events = messages.map { $0.data["mc_event"] ?? "?" }
            #expect(events.first == "start" && events.last == "end" && events.filter { $0 == "end" }.count == 1, "\(events)")
            #expect(messages.allSatisfy { $0.token == FCMFixture.registrationToken && $0.collapseKey == "mc-football" })
            #expect(messages.allSatisfy { $0.data["mc_match"] == "football" })
            #expect(messages.first?.priority == "HIGH" && messages.last?.priority == "HIGH")
            #expect(messages.last?.data["mc_final"] == "1")
            let times = messages.compactMap { $0.data["mc_ts"].flatMap(Int.init) }
            #expect(times == times.sorted(), "in order")
            #expect(server.grants == 1, "one access token for the whole match")
            #expect(!result.stderr.contains(FCMFixture.registrationToken), "the token never shows whole")
        }
    }

    @Test("a registration token FCM calls dead stops follow with exit 1 and says why", .timeLimit(.minutes(2)))
    func deadToken() async throws {
        let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
        try await FCMFixture.withServer { server, _ in
            let (folder, flags) = try Self.setUp(server)
            defer { try? FileManager.default.removeItem(at: folder) }
            server.unregister(FCMFixture.registrationToken)
            let result = try await MatchcastProcess.run(binary, ["follow", "football", "--feed", "fake?speed=60"] + flags)
            #expect(result.status == 1, "stderr:\n\(result.stderr)")
            #expect(result.stderr.contains("FCM calls the registration token"), "\(result.stderr)")
            #expect(result.stderr.contains("UNREGISTERED"), "\(result.stderr)")
            #expect(!result.stderr.contains(FCMFixture.registrationToken))
        }
    }

    @Test("replay --sink fcm: a recorded match reaches the device, start to end, every message at high priority",
          .timeLimit(.minutes(2)))
    func replay() async throws {
        try await FCMFixture.withServer { server, _ in
            let (folder, flags) = try Self.setUp(server)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await ReplayCommand.parse([ReplayAPNsTests.goldenRecording.path, "--fast"] + flags).run()
            #expect(server.problems.isEmpty, "\(server.problems)")
            let messages = server.messages
            try #require(messages.count >= 3, "\(messages.count) messages")
            let matchId = try #require(messages.first?.data["mc_match"])
            let events = messages.map { $0.data["mc_event"] ?? "?" }
            #expect(events.first == "start" && events.last == "end", "\(events)")
            #expect(events.filter { $0 == "start" }.count == 1 && events.filter { $0 == "end" }.count == 1, "\(events)")
            #expect(events.dropFirst().dropLast().allSatisfy { $0 == "update" }, "\(events)")
            #expect(messages.allSatisfy { $0.token == FCMFixture.registrationToken && $0.collapseKey == "mc-" + matchId })
            #expect(messages.allSatisfy { $0.data["mc_match"] == matchId })
            #expect(messages.allSatisfy { $0.priority == "HIGH" }, "routine updates too")
            #expect(messages.last?.data["mc_final"] == "1")
            let times = messages.compactMap { $0.data["mc_ts"].flatMap(Int.init) }
            #expect(times.count == messages.count && times == times.sorted(), "in order")
            #expect(server.grants == 1, "one access token for the whole replay")
        }
    }

    @Test("the flags, keys and variables of --sink fcm mean the same to follow and replay; serve refuses it; a bad file is one line")
    func configuration() async throws {
        try await FCMFixture.withServer { server, _ in
            let (folder, flags) = try Self.setUp(server)
            defer { try? FileManager.default.removeItem(at: folder) }
            let accountFile = flags[3]
            let environment = [
                "MATCHCAST_SINKS": "fcm", "MATCHCAST_FCM_SERVICE_ACCOUNT_FILE": accountFile,
                "MATCHCAST_FCM_REGISTRATION_TOKEN": FCMFixture.registrationToken, "MATCHCAST_FCM_ENDPOINT": server.url,
            ]
            let file = folder.appendingPathComponent("config.yaml")
            try Data("""
                sinks: [fcm]
                fcm:
                  serviceAccountFile: \(accountFile)
                  registrationToken: "\(FCMFixture.registrationToken)"
                  endpoint: "\(server.url)"

                """.utf8).write(to: file)
            for command in ["follow", "replay"] {
                let made = [
                    try SinkOptionsTests.configuration(command, flags),
                    try SinkOptionsTests.configuration(command, [], environment: environment),
                    try SinkOptionsTests.configuration(command, ["--config", file.path]),
                ]
                for configuration in made {
                    #expect(configuration.sinks == ["fcm"])
                    #expect(configuration.fcm.serviceAccountFile == accountFile)
                    #expect(configuration.fcm.registrationToken == FCMFixture.registrationToken)
                    #expect(configuration.fcm.endpoint == server.url)
                    try await ServeAPNsTests.withClient { client in
                        let sinks = try SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
                            .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
                        defer { SinkFactory.shutdown(sinks) }
                        #expect(sinks.first is FCMSink)
                    }
                }
                // Without a token: one line naming the flag.
                #expect {
                    _ = try SinkOptionsTests.configuration(command, Array(flags.prefix(4)))
                } throws: { error in
                    guard let error = error as? ConfigurationError else { return false }
                    return SinkOptions.message(error).hasPrefix("--fcm-token (fcm.registrationToken): the fcm sink needs")
                }
            }
            // serve sends to the tokens devices register: one token is refused, and none is needed.
            for arguments in [flags, []] {
                #expect {
                    _ = try SinkOptionsTests.configuration("serve", arguments, environment: arguments.isEmpty ? environment : [:])
                } throws: { error in
                    guard let error = error as? ConfigurationError else { return false }
                    return SinkOptions.message(error).hasPrefix("--fcm-token (fcm.registrationToken): serve sends each message to the FCM token its device registered")
                }
            }
            let serving = try SinkOptionsTests.configuration("serve", Array(flags.prefix(4)) + Array(flags.suffix(2)))
            #expect(serving.sinks == ["fcm"] && serving.fcm.registrationToken.isEmpty)
            // A service account file that is not one: the sink is refused at start, naming the flag, never the key.
            let bad = folder.appendingPathComponent("bad.json")
            try FCMFixture.serviceAccountJSON(tokenURI: server.tokenURI, changes: ["client_email": NSNull()]).write(to: bad)
            var configuration = try SinkOptionsTests.configuration("follow", flags)
            configuration.fcm.serviceAccountFile = bad.path
            try await ServeAPNsTests.withClient { client in
                #expect {
                    _ = try SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
                        .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
                } throws: { error in
                    guard let error = error as? ConfigurationError else { return false }
                    let line = SinkOptions.message(error)
                    return line.hasPrefix("--fcm-service-account (fcm.serviceAccountFile):") && line.contains("client_email")
                        && !line.contains("PRIVATE KEY")
                }
            }
        }
    }
}
