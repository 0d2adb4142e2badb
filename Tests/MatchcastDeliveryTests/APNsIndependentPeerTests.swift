import APNsPeer
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import NIOHTTP2
import Synchronization
import Testing

/// The APNs sink's hand-framed HTTP/2 client against `APNsPeer`, a server built on swift-nio-http2
/// that shares none of its framing, HPACK or flow-control code: many streams with bodies larger
/// than the windows, SETTINGS changed mid-connection, GOAWAY with streams in flight, RST_STREAM,
/// header blocks split into CONTINUATION frames, an HPACK dynamic table that keeps evicting, and
/// error answers. Every case must deliver each notification exactly once and read every answer right.
@Suite("APNs client against an independent HTTP/2 server", .serialized, .timeLimit(.minutes(3)))
struct APNsIndependentPeerTests {
    @Test(arguments: PeerFixture.modes) func manyStreamsWithFourKilobyteBodiesPassThroughWindowsSmallerThanOneBody(frameLevel: Bool) async throws {
        try await PeerFixture.run(frameLevel: frameLevel, configure: { peer in
            peer.maxConcurrentStreams = 100
            peer.initialWindowSize = 1000
            peer.connectionWindow = 4000
        }) { peer, fixture in
            let deliveries = PeerFixture.deliveries(600, summaryBytes: 3_400)
            let sink = try fixture.sink(peer, maxConnections: 1)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)

            #expect(peer.statusCounts == [200: 600])
            #expect(Set(peer.acceptedByID.values) == [1], "each notification accepted once")
            #expect(peer.acceptedByID.count == 600)
            let bodies = Set(peer.requests.map(\.body))
            #expect(bodies.count == 1, "every request carried the one shared payload, whole")
            let body = try #require(bodies.first)
            #expect((3_400...4_096).contains(body.count))
            #expect(String(decoding: body, as: UTF8.self).contains(PeerFixture.filler(3_400)))
            #expect(peer.connectionsAccepted == 1)
            #expect(peer.peakOpenStreams > 10, "requests were multiplexed")
            #expect(peer.peakOpenStreams <= 100)
        }
    }

    @Test(arguments: PeerFixture.modes) func maxConcurrentStreamsLoweredMidConnectionIsObeyedByNewStreams(frameLevel: Bool) async throws {
        try await PeerFixture.run(frameLevel: frameLevel, configure: { $0.maxConcurrentStreams = 50 }) { peer, fixture in
            let sink = try fixture.sink(peer, maxConnections: 1)
            defer { sink.shutdown() }
            peer.hold()
            let sending = Task { try await sink.deliver(PeerFixture.deliveries(300, summaryBytes: 3_000)) }
            #expect(await peer.waitForRequests(50))
            // Fewer streams, a window smaller than a body, larger frames: all at once, mid-connection.
            try await peer.changeSettings([(.maxConcurrentStreams, 4), (.initialWindowSize, 1500), (.maxFrameSize, 32_768)])
            try await Task.sleep(for: .milliseconds(300))  // the client reads and acknowledges them
            peer.release()
            try await sending.value

            #expect(peer.statusCounts == [200: 300])
            #expect(peer.acceptedByID.count == 300 && Set(peer.acceptedByID.values) == [1])
            #expect(peer.requestCount == 300, "nothing was refused or resent")
            #expect(peer.peakOpenAtNewStreamSinceSettings > 0)
            #expect(peer.peakOpenAtNewStreamSinceSettings <= 4, "no stream opened beyond the new limit")
            #expect(peer.connectionsAccepted == 1)
        }
    }

    @Test(arguments: PeerFixture.modes) func goAwayWithStreamsInFlightResendsTheUnprocessedOnesOnANewConnection(frameLevel: Bool) async throws {
        try await PeerFixture.run(frameLevel: frameLevel, configure: { _ in }) { peer, fixture in
            let sink = try fixture.sink(peer, maxConnections: 2)
            defer { sink.shutdown() }
            peer.hold()
            let sending = Task { try await sink.deliver(PeerFixture.deliveries(40)) }
            #expect(await peer.waitForRequests(40))
            let dropped = try await peer.goAway(keep: 15)
            #expect(dropped == 25)
            peer.release()
            try await sending.value

            #expect(peer.statusCounts == [200: 40])
            #expect(peer.acceptedByID.count == 40 && Set(peer.acceptedByID.values) == [1])
            #expect(peer.requestCount == 65, "the 25 unprocessed were sent once more")
            #expect(peer.connectionsAccepted == 2)
            #expect(sink.connectionStatus.resent == 25)
        }
    }

    @Test(arguments: PeerFixture.modes) func resetStreamsAreSentAgainRefusedAtOnceOthersAfterABackoff(frameLevel: Bool) async throws {
        let attempts = Mutex<[String: Int]>([:])
        try await PeerFixture.run(frameLevel: frameLevel, configure: { peer in
            peer.answer = { request in
                let token = request.token ?? ""
                let attempt = attempts.withLock { seen in
                    seen[token, default: 0] += 1
                    return seen[token]!
                }
                guard attempt == 1, let index = PeerFixture.index(of: token) else { return .ok }
                switch index % 4 {
                case 0: return .reset(code: 0x7)  // REFUSED_STREAM: not processed
                case 1: return .reset(code: 0x2)  // INTERNAL_ERROR
                default: return .ok
                }
            }
        }) { peer, fixture in
            let sink = try fixture.sink(peer, maxConnections: 1)
            defer { sink.shutdown() }
            try await sink.deliver(PeerFixture.deliveries(80))

            #expect(peer.resets == 40)
            #expect(peer.statusCounts == [200: 80])
            #expect(peer.acceptedByID.count == 80 && Set(peer.acceptedByID.values) == [1])
            #expect(peer.requestCount == 120)
            #expect(sink.connectionStatus.resent == 20, "the refused streams went again at once; the others by the retry policy")
            #expect(peer.connectionsAccepted == 1, "a reset stream leaves the connection up")
        }
    }

    @Test(arguments: PeerFixture.modes) func answersInContinuationFramesWithAnEvictingDynamicTableAreReadRight(frameLevel: Bool) async throws {
        try await PeerFixture.run(frameLevel: frameLevel, configure: { peer in
            peer.headerFragmentBytes = 7
            peer.fillerHeaderBytes = 900  // about four answers fill the 4,096-byte table
            peer.answer = { request in
                switch PeerFixture.index(of: request.token ?? "").map({ $0 % 3 }) {
                case 0: .error(status: 410, reason: "Unregistered")
                case 1: .error(status: 400, reason: "BadDeviceToken")
                default: .ok
                }
            }
        }) { peer, fixture in
            let sink = try fixture.sink(peer, maxConnections: 1)
            defer { sink.shutdown() }
            let deliveries = PeerFixture.deliveries(300)
            try await sink.deliver(deliveries)

            #expect(peer.statusCounts == [200: 100, 410: 100, 400: 100])
            #expect(peer.requestCount == 300, "no answer was misread as one to retry")
            let reports = await fixture.invalid.reports
            #expect(reports.count == 200)
            let expected = Dictionary(uniqueKeysWithValues: deliveries.enumerated().compactMap { index, delivery in
                index % 3 == 2 ? nil : (delivery.target.value, index % 3 == 0 ? "Unregistered" : "BadDeviceToken")
            })
            #expect(Dictionary(reports.map { ($0.token, $0.reason) }, uniquingKeysWith: { first, _ in first }) == expected)
            #expect(peer.connectionsAccepted == 1)
        }
    }
}

/// A peer with a throwaway certificate, a signing key and a sink pointed at the peer.
struct PeerFixture {
    static let keyId = "PEER123KEY"
    static let teamId = "PEERTEAM12"
    static let topic = "com.example.peer.push-type.liveactivity"

    let key = P256.Signing.PrivateKey()
    let certificates: TestCertificates
    let client: HTTPClient
    let invalid = InvalidTokenReports()

    /// Every case runs against both of the peer's ways of serving a stream: a child channel of NIOHTTP2's multiplexer
    /// per stream, and the frame-level handler the benchmark's fake runs (`APNsPeer.Configuration.frameLevel`).
    static let modes = [false, true]

    static func run(
        frameLevel: Bool, configure: (inout APNsPeer.Configuration) -> Void, _ body: (APNsPeer, PeerFixture) async throws -> Void
    ) async throws {
        let certificates = try TestCertificates.make()
        var configuration = APNsPeer.Configuration(
            certificateChainPEM: certificates.serverCertificatePEM, privateKeyPEM: certificates.serverKeyPEM)
        configuration.frameLevel = frameLevel
        configure(&configuration)
        let peer = try await APNsPeer.start(configuration)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let fixture = PeerFixture(certificates: certificates, client: client)
        do {
            try await body(peer, fixture)
        } catch {
            try? await client.shutdown()
            await peer.stop()
            throw error
        }
        try await client.shutdown()
        await peer.stop()
    }

    /// Retries come fast (10 ms) and often enough for every case here. The request timeout is longer than any case
    /// takes even on a loaded machine: a request that times out is sent again (at least once, as APNs is), which these
    /// cases, counting each notification exactly once, would take for a framing fault.
    func sink(_ peer: APNsPeer, maxConnections: Int) throws -> APNsSink {
        let invalid = self.invalid
        return try APNsSink(
            configuration: APNsSinkConfiguration(
                key: .pem(key.pemRepresentation), keyId: Self.keyId, teamId: Self.teamId, environment: .sandbox,
                endpoint: peer.url, trustRoots: .pem(certificates.caPEM), maxConcurrentRequests: 100,
                requestTimeout: .seconds(150), retry: RetryPolicy(maxAttempts: 4, initialBackoff: .milliseconds(10), jitter: 0),
                maxConnections: maxConnections, connectTimeout: .seconds(20)),
            client: client, deadLetters: InMemoryDeadLetters(),
            onInvalidToken: { token, reason in await invalid.record(token, reason) },
            logger: Logger(label: "test.peer", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// A token whose first 8 hex digits are `index`.
    static func token(_ index: Int) -> String { String(format: "%08x", index) + String(repeating: "5eed", count: 14) }

    static func index(of token: String) -> Int? { Int(token.prefix(8), radix: 16) }

    static func filler(_ bytes: Int) -> String { String(repeating: "0123456789", count: bytes / 10 + 1).prefix(bytes).description }

    /// `count` updates to `token(0)`, `token(1)`, …, sharing one payload whose summary is `summaryBytes` long.
    static func deliveries(_ count: Int, summaryBytes: Int = 40) -> [Delivery] {
        let state = ContentState(
            status: "live", statusText: "Live", home: .init(name: "ARS", score: "2"), away: .init(name: "CHE", score: "1"),
            summary: filler(summaryBytes))
        let payload = try! PushPayload(APS(timestamp: 1_776_784_329, event: .update, contentState: state, staleDate: 1_776_784_629))
        return (0..<count).map { index in
            Delivery(
                id: "peer_\(index)", matchId: "peer-match", activityId: "act_\(index)",
                target: PushTarget(kind: .updateToken, value: token(index)),
                apns: APNsHeaders(topic: topic, priority: 10, expiration: 1_776_784_629), payload: payload)
        }
    }
}

/// What the sink reported through `onInvalidToken`.
actor InvalidTokenReports {
    private(set) var reports: [(token: String, reason: String)] = []

    func record(_ token: String, _ reason: String) { reports.append((token, reason)) }
}
