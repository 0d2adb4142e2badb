import AsyncHTTPClient
import Crypto
import Foundation
import Logging
@testable import MatchcastCLI
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Testing

/// `serve`'s broadcast channel keys: flags and environment, the apns sink they need, and the channel
/// client `serve` builds from them.
@Suite("serve: broadcast channel configuration", .serialized)
struct BroadcastConfigurationTests {
    private typealias F = APNsFixture
    static let quiet = Logger(label: "test.broadcast-config", factory: { _ in SwiftLogNoOpLogHandler() })

    static func load(_ arguments: [String], environment: [String: String] = [:]) throws -> BrokerConfiguration {
        try ServeCommand.parse(arguments).loadConfiguration(environment: environment)
    }

    @Test func offByDefaultAndSetByFlagOrEnvironment() throws {
        #expect(try Self.load([]).broadcastMinFollowers == 0)
        #expect(try Self.load([]).apns.channelsEndpoint == "")
        let keyFile = try ServeAPNsTests.write(P256.Signing.PrivateKey().pemRepresentation, named: "AuthKey_\(F.keyId).p8")
        let apns = ["--sink", "apns"] + ServeAPNsTests.apnsFlags(keyFile: keyFile)
        let flagged = try Self.load(apns + ["--broadcast-min-followers", "500", "--apns-channels-endpoint", "https://127.0.0.1:9443"])
        #expect(flagged.broadcastMinFollowers == 500)
        #expect(flagged.apns.channelsEndpoint == "https://127.0.0.1:9443")
        let fromEnvironment = try Self.load(apns, environment: ["MATCHCAST_BROADCAST_MIN_FOLLOWERS": "7"])
        #expect(fromEnvironment.broadcastMinFollowers == 7)
    }

    @Test func channelModeWithoutTheAPNsSinkOrWithABadEndpointIsRefusedNamingTheKey() throws {
        let withoutAPNs = try #require(throws: ConfigurationError.self) { try Self.load(["--broadcast-min-followers", "10"]) }
        #expect(withoutAPNs.key == "broadcast.minFollowers")
        #expect(withoutAPNs.reason.contains("--sink apns"))
        let badEndpoint = try #require(throws: ConfigurationError.self) { try Self.load(["--apns-channels-endpoint", "http://x"]) }
        #expect(badEndpoint.key == "apns.channelsEndpoint")
        let negative = try #require(throws: ConfigurationError.self) {
            try Self.load([], environment: ["MATCHCAST_BROADCAST_MIN_FOLLOWERS": "-1"])
        }
        #expect(negative.key == "broadcast.minFollowers")
    }

    @Test func serveBuildsTheChannelClientOnTheAPNsSinksEndpointUnlessToldOtherwise() async throws {
        let key = P256.Signing.PrivateKey()
        let keyFile = try ServeAPNsTests.write(key.pemRepresentation, named: "AuthKey_\(F.keyId).p8")
        let base = ["--sink", "apns", "--apns-endpoint", "https://127.0.0.1:8443", "--bundle-id", "com.example.app"]
            + ServeAPNsTests.apnsFlags(keyFile: keyFile)
        try await ServeAPNsTests.withClient { client in
            let off = try Self.load(base)
            let offSinks = try ServeAPNsTests.makeSinks(base, client: client)
            defer { SinkFactory.shutdown(offSinks) }
            let store = InMemoryStore()
            #expect(try SinkFactory(configuration: off, client: client, logger: Self.quiet)
                .broadcastChannels(sinks: offSinks, store: store, settings: BrokerSettings(), clock: ContinuousClock()) == nil)

            let on = try Self.load(base + ["--broadcast-min-followers", "3"])
            let factory = SinkFactory(configuration: on, client: client, logger: Self.quiet)
            let sinks = try ServeAPNsTests.makeSinks(base + ["--broadcast-min-followers", "3"], client: client)
            defer { SinkFactory.shutdown(sinks) }
            let channelClient = try #require(try factory.channelClient(for: sinks))
            defer { channelClient.shutdown() }
            #expect(channelClient.endpoint == "https://127.0.0.1:8443")
            #expect(channelClient.bundleId == "com.example.app")
            #expect(try factory.broadcastChannels(sinks: sinks, store: store, settings: BrokerSettings(), clock: ContinuousClock()) != nil)

            let apart = try Self.load(base + ["--broadcast-min-followers", "3", "--apns-channels-endpoint", "https://127.0.0.1:2195"])
            let apartClient = try #require(try SinkFactory(configuration: apart, client: client, logger: Self.quiet).channelClient(for: sinks))
            defer { apartClient.shutdown() }
            #expect(apartClient.endpoint == "https://127.0.0.1:2195")
        }
    }
}
