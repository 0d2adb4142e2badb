import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Testing

/// The channel management client and broadcast sends against the fake APNs over TLS + HTTP/2 on a
/// loopback port. Serialized, like the sink's suite: the deadline test holds a connection open.
@Suite("APNs broadcast channels: management client and broadcast sends", .serialized, .timeLimit(.minutes(2)))
struct APNsChannelTests {
    private typealias F = APNsFixture
    static let bundleId = "com.example.matchcast"

    private static func client(_ sink: APNsSink, endpoint: String? = nil) throws -> APNsChannelClient {
        try APNsChannelClient(
            sink: sink, bundleId: bundleId, endpoint: endpoint,
            logger: Logger(label: "test.channels", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// A broadcast delivery to `channel` (an update of the fixture's payload).
    private static func broadcast(_ channel: String, id: String, priority: Int = 5) -> Delivery {
        var delivery = F.deliveries(1, prefix: id, priority: priority)[0]
        delivery.target = PushTarget(kind: .channel, value: channel)
        return delivery
    }

    @Test func createListAndDeleteChannelsWithTheSinksProviderToken() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            #expect(channels.endpoint == server.url, "a sink pointed at a test server takes its channels there too")

            let first = try await channels.create()
            let second = try await channels.create(storagePolicy: .noStorage)
            #expect(first != second)
            #expect(Data(base64Encoded: first) != nil, "channel ids are base64, kept as APNs gives them")
            #expect(server.liveChannels == [first, second].sorted())
            #expect(try await channels.list().sorted() == [first, second].sorted())

            #expect(try await channels.delete(channelId: first))
            #expect(server.liveChannels == [second])
            // Deleting again: APNs no longer knows it; deleted either way.
            #expect(try await !channels.delete(channelId: first))
            #expect(try await channels.list() == [second])
            #expect(server.deletedChannels == [first])
            #expect(server.channelRequests.map(\.operation) == ["create", "create", "list", "delete", "delete", "list"])
            #expect(server.channelRequests.map(\.status) == [201, 201, 200, 204, 404, 200])
            // One provider token for the sink and the channel client.
            #expect(sink.signer.tokensIssued == 1)
        }
    }

    @Test func refusalsAreThrownWithStatusReasonAndAHint() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }

            server.failChannelRequests(next: 1, with: .internalServerError)
            let serverError = try await #require(throws: APNsChannelError.self) { try await channels.create() }
            #expect(serverError.reason == "rejected" && serverError.status == 500 && serverError.isTransient)
            #expect(serverError.operation == "create")

            server.failChannelRequests(next: 1, with: .tooManyRequests)
            let throttled = try await #require(throws: APNsChannelError.self) { try await channels.delete(channelId: "eA==") }
            #expect(throttled.status == 429 && throttled.isTransient)
            #expect("\(throttled)".contains("TooManyRequests"))

            // ExpiredProviderToken: one retry with a new provider token, which the fake accepts.
            server.failChannelRequests(next: 1, with: .expiredProviderToken)
            let id = try await channels.create()
            #expect(server.liveChannels == [id])
            #expect(sink.signer.tokensIssued == 2)
        }
        // Signed by another key: APNs refuses the provider token; nothing is created.
        let (other, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: other)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            let refused = try await #require(throws: APNsChannelError.self) { try await channels.create() }
            #expect(refused.status == 403 && refused.apnsReason == "InvalidProviderToken" && !refused.isTransient)
            #expect("\(refused)".contains("key id, team id or key is wrong"))
            #expect(!"\(refused)".contains("bearer"))
            #expect(server.liveChannels.isEmpty)
        }
    }

    @Test func anUnansweredRequestFailsAtTheDeadline() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            // Generous deadlines on a loaded machine; the point is that the request fails, not hangs.
            let sink = try F.sink(server: server, client: httpClient, key: key, requestTimeout: .seconds(3))
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            _ = try await channels.list()  // the connection is up
            server.stopAnswering()
            let started = ContinuousClock.now
            let error = try await #require(throws: APNsChannelError.self) { try await channels.create() }
            #expect(error.reason == "timeout" && error.isTransient)
            #expect(ContinuousClock.now - started >= .seconds(2))
            server.resumeAnswering()
        }
    }

    @Test func aBadEndpointOrBundleIdIsRefusedAtSetUp() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key)
            #expect(throws: APNsChannelError.self) { try Self.client(sink, endpoint: "http://127.0.0.1:1") }
            #expect(throws: APNsChannelError.self) { try Self.client(sink, endpoint: "https://127.0.0.1:1/1/apps") }
            #expect(throws: APNsChannelError.self) {
                try APNsChannelClient(sink: sink, bundleId: "../../x")
            }
            #expect(APNsChannelClient.defaultEndpoint(for: .production) == "https://api-manage-broadcast.push.apple.com:2196")
            #expect(APNsChannelClient.defaultEndpoint(for: .sandbox) == "https://api-manage-broadcast.sandbox.push.apple.com:2195")
        }
    }

    @Test func channelDeliveriesAreBroadcastOncePerDeliveryNextToDevicePushes() async throws {
        let (key, _) = try F.credentials()
        let deadLetters = InMemoryDeadLetters()
        let metrics = RecordingMetrics()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key, deadLetters: deadLetters, metrics: metrics)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            let a = try await channels.create()
            let b = try await channels.create()
            let batch = [Self.broadcast(a, id: "a1_", priority: 10), F.deliveries(1)[0], Self.broadcast(b, id: "b1_"),
                         Self.broadcast(a, id: "a2_"), Self.broadcast("bm90LWEtY2hhbm5lbA==", id: "x_")]
            try await sink.deliver(batch)

            #expect(server.broadcastCount(channel: a) == 2)
            #expect(server.broadcastCount(channel: b) == 1)
            #expect(server.accepted.map(\.token) == [F.token(0)], "device pushes go as before")
            let onA = server.broadcasts.filter { $0.channelId == a }
            #expect(onA.map(\.priority) == [10, 5], "one channel's broadcasts in order")
            #expect(onA.allSatisfy { $0.bundleId == Self.bundleId && $0.expiration == 1_776_784_629 })
            #expect(onA.first?.body == batch[0].payload.bytes)
            #expect(onA.first?.requestId == APNsNotificationID.uuid(forDeliveryId: batch[0].id))
        }
        // A channel APNs does not know: refused, dead-lettered, not retried, never reported as a dead token.
        #expect(await deadLetters.deliveries.map(\.target.value) == ["bm90LWEtY2hhbm5lbA=="])
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "delivered")]) == 4)
        #expect(metrics.counter("matchcast_deliveries_total", [("sink", "apns"), ("outcome", "dead_letter")]) == 1)
    }

    @Test func aThrottledBroadcastIsRetriedWithTheSameRequestId() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            let channel = try await channels.create()
            server.fail(next: 1, with: .tooManyRequests)
            let first = Self.broadcast(channel, id: "r1_")
            try await sink.deliver([first])
            let requestId = APNsNotificationID.uuid(forDeliveryId: first.id)
            #expect(server.broadcasts.map(\.requestId) == [requestId])
            #expect(server.broadcastAttempts(requestId: requestId) == 2)
        }
    }

    /// Broadcasts share the device pushes' answer handling, all but this: an answer that would mean
    /// a dead device token (410 Unregistered) dead-letters a broadcast and reports nothing.
    @Test func aBroadcastAnsweredLikeADeadTokenIsDeadLetteredNotReported() async throws {
        let (key, _) = try F.credentials()
        let deadLetters = InMemoryDeadLetters()
        let invalidTokens = InvalidTokens()
        try await F.withServer(key: key) { server, httpClient in
            let sink = try F.sink(server: server, client: httpClient, key: key, invalidTokens: invalidTokens, deadLetters: deadLetters)
            let channels = try Self.client(sink)
            defer { channels.shutdown() }
            let channel = try await channels.create()
            server.fail(next: 1, with: .unregistered)
            let refused = Self.broadcast(channel, id: "u1_")
            let next = Self.broadcast(channel, id: "u2_")
            try await sink.deliver([refused, next])
            #expect(server.broadcastAttempts(requestId: APNsNotificationID.uuid(forDeliveryId: refused.id)) == 1, "not retried")
            #expect(server.broadcastCount(channel: channel) == 1, "the channel's next broadcast still goes")
            #expect(await deadLetters.deliveries.map(\.id) == [refused.id])
        }
        #expect(await invalidTokens.reports.isEmpty)
    }
}
