import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
@testable import MatchcastCLI
import MatchcastDelivery
import MatchcastTesting
import Testing

/// Issue 16: `follow`, `replay` and `serve` take one set of sink flags (and the same config keys and
/// environment variables), and `SinkFactory` builds the same sinks from them for each.
@Suite("sinks: the same flags, keys and variables for follow, replay and serve")
struct SinkOptionsTests {
    static let commands = ["follow", "replay", "serve"]
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// The sink configuration `command` makes from `arguments` (its own positional argument added).
    static func configuration(_ command: String, _ arguments: [String], environment: [String: String] = [:]) throws -> BrokerConfiguration {
        switch command {
        case "follow": try FollowCommand.parse(["football"] + arguments).sinkConfiguration(environment: environment)
        case "replay": try ReplayCommand.parse(["recording.ndjson"] + arguments).sinkConfiguration(environment: environment)
        default: try ServeCommand.parse(arguments).loadConfiguration(environment: environment)
        }
    }

    /// A key file and CA file that load.
    static func files() throws -> (keyFile: String, caFile: String) {
        let keyFile = try ServeAPNsTests.write(P256.Signing.PrivateKey().pemRepresentation, named: "AuthKey_\(APNsFixture.keyId).p8")
        let caFile = try TestCertificates.make().writeCAFile()
        return (keyFile, caFile)
    }

    /// Every sink flag, each away from its default.
    static func allFlags(keyFile: String, caFile: String) -> [String] {
        [
            "--sink", "apns", "--sink", "webhook", "--sink", "pretty",
            "--webhook-url", "https://hooks.example/matchcast", "--webhook-secret", secret, "--webhook-batch-size", "7",
            "--apns-key-file", keyFile, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId,
            "--apns-topic", "com.example.scores", "--apns-environment", "sandbox", "--apns-endpoint", "https://127.0.0.1:2197",
            "--apns-ca-file", caFile, "--apns-max-connections", "3", "--apns-max-concurrent-requests", "50",
            "--apns-channels-endpoint", "https://127.0.0.1:2195",
        ]
    }

    /// The sinks built from `configuration`, described so two commands' can be compared.
    static func describeSinks(_ configuration: BrokerConfiguration, client: HTTPClient) throws -> [String] {
        let sinks = try SinkFactory(configuration: configuration, client: client, logger: ServeAPNsTests.quiet)
            .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, onInvalidToken: { _, _ in })
        defer { SinkFactory.shutdown(sinks) }
        return sinks.map { sink in
            switch sink {
            case let apns as APNsSink:
                let c = apns.configuration
                return "apns \(c.resolvedEndpoint) \(c.environment) \(c.keyId) \(c.teamId) \(c.trustRoots) "
                    + "connections=\(c.maxConnections) streams=\(c.maxConcurrentRequests)"
            case let webhook as WebhookSink:
                return "webhook \(webhook.configuration.url) batch=\(webhook.configuration.maxBatch)"
            default:
                return sink.name
            }
        }
    }

    @Test("every sink flag means the same to each command, and builds the same sinks", arguments: commands)
    func sameFlags(command: String) async throws {
        let (keyFile, caFile) = try Self.files()
        let configuration = try Self.configuration(command, Self.allFlags(keyFile: keyFile, caFile: caFile))
        #expect(configuration.sinks == ["apns", "webhook", "pretty"])
        #expect(configuration.topicBundleId == "com.example.scores")
        #expect(configuration.apns.channelsEndpoint == "https://127.0.0.1:2195")
        try await ServeAPNsTests.withClient { client in
            let described = try Self.describeSinks(configuration, client: client)
            #expect(described == [
                "apns https://127.0.0.1:2197 sandbox \(APNsFixture.keyId) \(APNsFixture.teamId) file(\(caFile)) connections=3 streams=50",
                "webhook https://hooks.example/matchcast batch=7",
                "pretty",
            ])
            // The other commands, given the same flags, build exactly the same.
            for other in Self.commands where other != command {
                let theirs = try Self.configuration(other, Self.allFlags(keyFile: keyFile, caFile: caFile))
                #expect(try Self.describeSinks(theirs, client: client) == described, "\(command) and \(other) differ")
            }
        }
    }

    @Test("the same environment variables set the sinks of each command; flags win over them", arguments: commands)
    func sameEnvironment(command: String) throws {
        let (keyFile, _) = try Self.files()
        let environment = [
            "MATCHCAST_SINKS": "apns,webhook", "MATCHCAST_WEBHOOK_URL": "https://hooks.example/x", "MATCHCAST_WEBHOOK_SECRET": Self.secret,
            "MATCHCAST_WEBHOOK_BATCH_SIZE": "9", "MATCHCAST_APNS_KEY_FILE": keyFile, "MATCHCAST_APNS_KEY_ID": APNsFixture.keyId,
            "MATCHCAST_APNS_TEAM_ID": APNsFixture.teamId, "MATCHCAST_APNS_MAX_CONNECTIONS": "2", "MATCHCAST_APNS_ENVIRONMENT": "sandbox",
        ]
        let configuration = try Self.configuration(command, [], environment: environment)
        #expect(configuration.sinks == ["apns", "webhook"])
        #expect(configuration.webhookBatchSize == 9 && configuration.apns.maxConnections == 2)
        #expect(configuration.apns.environment == .sandbox && configuration.apns.keyFile == keyFile)
        let flagged = try Self.configuration(command, ["--apns-max-connections", "5", "--sink", "stdout"], environment: environment)
        #expect(flagged.apns.maxConnections == 5 && flagged.sinks == ["stdout"])
    }

    @Test("bad sink input is refused before anything runs: one line naming the flag, exit code 2", arguments: commands)
    func badInput(command: String) async throws {
        let (keyFile, _) = try Self.files()
        let apns = ["--sink", "apns", "--apns-key-file", keyFile, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId]
        let cases: [(arguments: [String], flag: String)] = [
            (["--sink", "apns", "--apns-key-file", keyFile, "--apns-key-id", "ABC123", "--apns-team-id", APNsFixture.teamId], "--apns-key-id"),
            (["--sink", "apns", "--apns-key-file", keyFile, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", "team id!!"], "--apns-team-id"),
            (["--sink", "apns", "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId], "--apns-key-file"),
            (apns + ["--apns-environment", "staging"], "--apns-environment"),
            (apns + ["--apns-max-connections", "0"], "--apns-max-connections"),
            (["--sink", "webhook", "--webhook-secret", Self.secret], "--webhook-url"),
            (["--sink", "carrier-pigeon"], "--sink"),
        ]
        for (arguments, flag) in cases {
            #expect {
                _ = try Self.configuration(command, arguments)
            } throws: { error in
                guard let error = error as? ConfigurationError else { return false }
                let line = SinkOptions.message(error)
                return line.hasPrefix(flag + " ") && !line.contains("\n")
            }
        }
        // Run for real: the command exits 2 before polling, reading a recording or serving.
        let badKeyId = ["--sink", "apns", "--apns-key-file", keyFile, "--apns-key-id", "ABC123", "--apns-team-id", APNsFixture.teamId]
        do {
            switch command {
            case "follow": try await FollowCommand.parse(["football", "--feed", "fake?speed=1000"] + badKeyId).run()
            case "replay": try await ReplayCommand.parse(["/nonexistent/recording.ndjson"] + badKeyId).run()
            default: try await ServeCommand.parse(["--store", "memory"] + badKeyId).run()
            }
            Issue.record("\(command) ran with a malformed key id")
        } catch let exit as ExitCode {
            #expect(exit.rawValue == 2)
        }
        // An unreadable key file passes the configuration and is refused when the sinks are built, naming its key.
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID().uuidString).p8").path
        let configuration = try Self.configuration(
            command, ["--sink", "apns", "--apns-key-file", missing, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId])
        try await ServeAPNsTests.withClient { client in
            #expect {
                _ = try Self.describeSinks(configuration, client: client)
            } throws: { error in
                guard let error = error as? ConfigurationError else { return false }
                return SinkOptions.message(error).hasPrefix("--apns-key-file (apns.keyFile): ")
            }
        }
    }

    @Test("APNs refusals are explained: the other environment for BadDeviceToken, the topic for TopicDisallowed")
    func refusalsExplained() throws {
        var configuration = try Self.configuration("follow", ["--apns-topic", "com.example.scores", "--apns-team-id", APNsFixture.teamId])
        let bad = APNsRefusal.explain(status: 400, reason: "BadDeviceToken", configuration: configuration)
        #expect(bad.contains("--apns-environment sandbox"))
        configuration.apns.environment = .sandbox
        #expect(APNsRefusal.explain(status: 400, reason: "BadDeviceToken", configuration: configuration).contains("--apns-environment production"))
        let topic = APNsRefusal.explain(status: 400, reason: "TopicDisallowed", configuration: configuration)
        #expect(topic.contains("com.example.scores.push-type.liveactivity") && topic.contains("--apns-topic"))
        #expect(APNsRefusal.explain(status: 403, reason: "InvalidProviderToken", configuration: configuration).contains("--apns-key-id"))
        #expect(APNsRefusal.explain(status: 410, reason: "Unregistered", configuration: configuration).contains("over"))
        for reason in ["BadDeviceToken", "TopicDisallowed", "InvalidProviderToken", "Unregistered", "TooManyRequests", "Other"] {
            #expect(!APNsRefusal.explain(status: 400, reason: reason, configuration: configuration).contains("\n"))
        }
    }
}
