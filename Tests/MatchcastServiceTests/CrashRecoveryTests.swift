import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import NIOCore
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `matchcast` binary, killed with SIGKILL in the middle of a fan-out and started again on the same SQLite
/// file: every activity still gets its `end`, and a delivery seen twice is the same delivery (same id, same bytes).
@Suite("Nothing lost: kill -9 in the middle of a fan-out", .serialized)
struct CrashRecoveryTests {
    static let followers = 40
    static let adminKey = "crash-test-admin"

    @Test("every end arrives after a kill -9 and a restart; duplicates only ever carry the same id")
    func killAndRestart() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let receiver = try await WebhookReceiver.start(secret: WebhookFixture.secret)
        // A slow receiver: a fan-out is always part-way through when the broker is killed.
        receiver.answer(after: .milliseconds(150))
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        // The feed outlives the broker, as a real one would.
        let feedPort = try MatchcastProcess.freePort()
        let feed = try MatchcastProcess.start(
            binary, ["fake-feed", "--port", "\(feedPort)", "--speed", "60", "--seed", "3"], log: directory, name: "feed")
        let apiPort = try MatchcastProcess.freePort()
        let serveArguments = try MatchcastProcess.sqliteServeArguments(
            in: directory, apiPort: apiPort, feedPort: feedPort, webhook: receiver.url, adminKey: Self.adminKey,
            coalesceSeconds: 1, pushToStartSpacingSeconds: 1)
        let api = BrokerAPI(client: client, port: apiPort)
        let broker = try MatchcastProcess.start(binary, serveArguments, log: directory, name: "serve-1")
        var restarted: MatchcastProcess?
        defer {  // cleanup only: nothing is waited for
            feed.kill()
            broker.kill()
            restarted?.kill()
        }
        do {
            try await api.waitUntilHealthy()
            try await #require(eventually(within: 60, every: .milliseconds(50)) { try await api.matchIsLive("football") })

            // Followers with push-to-start tokens; each start's activity gets its update token.
            var devices: [String: BrokerAPI.Device] = [:]  // by push-to-start token
            for index in 0..<Self.followers {
                let device = try await api.register(index: index)
                let token = MatchcastProcess.token(0xaa, index)
                try await api.setPushToStartToken(device, token: token)
                try await api.follow(device, match: "football")
                devices[token] = device
            }
            var registered: Set<String> = []
            try await #require(eventually(within: 90, every: .milliseconds(50)) {
                for start in receiver.received where start.payload.aps.event == .start && !registered.contains(start.activityId) {
                    let owner = try #require(devices[start.target.value], "a start to a token no device holds")
                    try await api.putActivity(
                        start.activityId, device: owner, match: "football",
                        updateToken: MatchcastProcess.token(0xbb, owner.index))
                    registered.insert(start.activityId)
                }
                return registered.count == Self.followers
            }, "every follower's activity started")

            // Kill as soon as an update fan-out is on its way.
            try await #require(eventually(within: 90, every: .milliseconds(50)) {
                receiver.received.contains { $0.payload.aps.event == .update } && receiver.arrivals > receiver.requests
            })
            broker.kill()
            let receivedAtKill = receiver.received.count

            restarted = try MatchcastProcess.start(binary, serveArguments, log: directory, name: "serve-2")
            try await api.waitUntilHealthy()
            let everyEnd = try await eventually(within: 300, every: .milliseconds(50)) {
                Set(receiver.received.filter { $0.payload.aps.event == .end }.map(\.activityId)).isSuperset(of: registered)
            }
            let received = receiver.received
            #expect(everyEnd, "ends for \(Set(received.filter { $0.payload.aps.event == .end }.map(\.activityId)).count) of \(registered.count) activities")

            // A delivery seen twice is the same delivery; one state of one activity has one id.
            let duplicates = auditDeliveryIds(received)
            #expect(!received.contains { $0.payload.aps.event == .start && !registered.contains($0.activityId) },
                    "no second start")
            print("crash-recovery: \(received.count) deliveries, \(receivedAtKill) before the kill, \(duplicates) repeated with the same id")
        } catch {
            print(MatchcastProcess.logs(directory))
            try? await client.shutdown()
            await receiver.stop()
            throw error
        }
        try await client.shutdown()
        await receiver.stop()
    }
}
