import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

/// `CrashRecoveryTests` at scale: 10,000 followers of one match, set up through the HTTP API, and the real binary
/// killed with SIGKILL while the fan-out of 10,000 starts is part-way through; started again on the same SQLite
/// file, it still brings every activity to the match's last state and its end, starts nothing twice, and a delivery
/// seen twice is the same delivery.
@Suite("Nothing lost at scale: kill -9 in the middle of a 10,000-activity fan-out", .serialized)
struct CrashRecoveryAtScaleTests {
    static let followers = 10_000
    /// Concurrent API calls while setting up.
    static let width = 16
    static let match = "football"

    @Test("a kill -9 mid fan-out of 10,000: every activity reaches the last state and its end, nothing starts twice",
          .timeLimit(.minutes(8)))
    func killMidFanOutAndRestart() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-crash-scale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let began = ContinuousClock.now
        func elapsed() -> String {
            let duration = ContinuousClock.now - began
            return String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18)
        }

        let receiver = try await WebhookReceiver.start(secret: WebhookFixture.secret)
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.width
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let feedPort = try MatchcastProcess.freePort()
        let apiPort = try MatchcastProcess.freePort()
        // No coalescing: every change of the match is one fan-out to every active activity.
        let serveArguments = try MatchcastProcess.sqliteServeArguments(
            in: directory, apiPort: apiPort, feedPort: feedPort, webhook: receiver.url, adminKey: CrashRecoveryTests.adminKey,
            coalesceSeconds: 0, pushToStartSpacingSeconds: 0)
        let api = BrokerAPI(client: client, port: apiPort)
        var processes: [MatchcastProcess] = []
        defer { for process in processes { process.kill() } }  // cleanup only: nothing is waited for
        do {
            // Set up through the API before the feed runs (the match is followed, not yet known), then restart
            // cleanly so the broker finds the feed at once rather than after its backoff.
            processes.append(try MatchcastProcess.start(binary, serveArguments, log: directory, name: "serve-setup"))
            try await api.waitUntilHealthy()
            let devices = try await Self.inParallel(Self.followers) { index in
                let device = try await api.register(index: index)
                try await api.setPushToStartToken(device, token: MatchcastProcess.token(0xaa, index))
                try await api.follow(device, match: Self.match)
                return device
            }
            let byStartToken = Dictionary(uniqueKeysWithValues: devices.map { (MatchcastProcess.token(0xaa, $0.index), $0) })
            print("crash-at-scale: \(Self.followers) devices registered, tokened and following after \(elapsed())")
            await processes[0].stop()

            // At 60× the football match lasts about two minutes: kick-off 2 s after the feed starts, and one fan-out
            // of 10,000 starts. A slow receiver makes that fan-out take a while; the broker is killed part-way through
            // it (some starts in, not all, a request in flight).
            receiver.answer(after: .milliseconds(200))
            processes.append(try MatchcastProcess.start(
                binary, ["fake-feed", "--port", "\(feedPort)", "--speed", "60", "--seed", "3"], log: directory, name: "feed"))
            let broker = try MatchcastProcess.start(binary, serveArguments, log: directory, name: "serve-1")
            processes.append(broker)
            try await api.waitUntilHealthy()
            try await #require(eventually(within: 120, every: .milliseconds(5)) {
                let starts = receiver.received.count { $0.payload.aps.event == .start }
                return starts > 0 && starts < Self.followers && receiver.arrivals > receiver.requests
            }, "the start fan-out part-way through")
            broker.kill()
            print("crash-at-scale: killed after \(elapsed())")
            // What was in flight at the kill lands (the receiver records a request once it answers it).
            try await Task.sleep(for: .milliseconds(500))
            let atKill = receiver.received
            let startsAtKill = Set(atKill.filter { $0.payload.aps.event == .start }.map(\.activityId)).count
            #expect(startsAtKill > 0 && startsAtKill < Self.followers,
                    "the kill came part-way through the fan-out: \(startsAtKill) of \(Self.followers) starts")

            receiver.answer(after: .zero)
            processes.append(try MatchcastProcess.start(binary, serveArguments, log: directory, name: "serve-2"))
            try await api.waitUntilHealthy()

            // Every start's activity gets its update token, as the app would report it.
            var registered: [String: BrokerAPI.Device] = [:]  // by activity id
            var seen = 0
            try await #require(eventually(within: 240, every: .milliseconds(50)) {
                let received = receiver.received
                var fresh: [(String, BrokerAPI.Device)] = []
                for start in received[seen...] where start.payload.aps.event == .start && registered[start.activityId] == nil {
                    let owner = try #require(byStartToken[start.target.value], "a start to a token no device holds")
                    fresh.append((start.activityId, owner))
                    registered[start.activityId] = owner
                }
                seen = received.count
                let batch = fresh
                _ = try await Self.inParallel(batch.count) { position in
                    let (activity, owner) = batch[position]
                    try await api.putActivity(
                        activity, device: owner, match: Self.match, updateToken: MatchcastProcess.token(0xbb, owner.index))
                }
                return registered.count >= Self.followers
            }, "every follower's activity started and got its update token: \(Self.census(receiver.received, registered: registered.count))")
            #expect(Set(registered.values.map(\.id)).count == Self.followers, "one activity per device")
            print("crash-at-scale: \(registered.count) activities started and tokened after \(elapsed())")

            var ended: Set<String> = []
            var endsSeen = 0
            let everyEnd = try await eventually(within: 240, every: .milliseconds(100)) {
                let received = receiver.received
                for delivery in received[endsSeen...] where delivery.payload.aps.event == .end { ended.insert(delivery.activityId) }
                endsSeen = received.count
                return ended.count == Self.followers
            }
            print("crash-at-scale: every end in after \(elapsed())")
            let received = receiver.received
            #expect(everyEnd, "ends for \(ended.count) of \(registered.count) activities")
            #expect(ended == Set(registered.keys))

            // A delivery seen twice is the same delivery; one state of one activity has one id.
            let duplicates = auditDeliveryIds(received)

            // Nothing starts twice: one start (one id) per activity, one activity per device, none unregistered.
            let byActivity = Dictionary(grouping: received, by: \.activityId)
            #expect(Set(byActivity.keys) == Set(registered.keys), "deliveries only for the registered activities")
            let starts = received.filter { $0.payload.aps.event == .start }
            #expect(Set(starts.map(\.target.value)).count == Self.followers)
            let startsByToken = Dictionary(grouping: starts, by: \.target.value).filter { Set($0.value.map(\.activityId)).count > 1 }
            #expect(startsByToken.isEmpty, "\(startsByToken.count) devices got starts for two activities")
            var twiceStarted = 0, twiceEnded = 0, endNotLast = 0, notFinal = 0
            let finals = Set(received.filter { $0.payload.aps.event == .end }.map(\.payload.aps.contentState))
            #expect(finals.count == 1, "every end carries the match's final state: \(finals.count) different")
            let final = finals.first
            for (_, deliveries) in byActivity {
                let distinct = Dictionary(deliveries.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }).values
                if Set(distinct.filter { $0.payload.aps.event == .start }.map(\.id)).count != 1 { twiceStarted += 1 }
                let ends = distinct.filter { $0.payload.aps.event == .end }
                if ends.count != 1 { twiceEnded += 1 }
                // The latest state wins: the end is the activity's last push, and it shows the final state.
                guard let end = ends.first else { continue }
                if distinct.contains(where: { $0.payload.aps.timestamp > end.payload.aps.timestamp }) { endNotLast += 1 }
                if end.payload.aps.contentState != final { notFinal += 1 }
            }
            #expect(twiceStarted == 0, "\(twiceStarted) activities without exactly one start")
            #expect(twiceEnded == 0, "\(twiceEnded) activities without exactly one end")
            #expect(endNotLast == 0, "\(endNotLast) activities got a push after their end")
            #expect(notFinal == 0, "\(notFinal) activities ended on another state than the final one")
            #expect(final?.status == "completed", "the last state is the final score: \(String(describing: final))")
            print(
                """
                crash-at-scale: \(received.count) deliveries, \(atKill.count) before the kill (\(startsAtKill) of \
                \(Self.followers) starts in), \(duplicates) repeated with the same id; \(elapsed()) in all
                """)
        } catch {
            print(MatchcastProcess.logs(directory))
            try? await client.shutdown()
            await receiver.stop()
            throw error
        }
        try await client.shutdown()
        await receiver.stop()
    }

    /// What the receiver got, by event, and how far the match went: what a failure needs to say where it stopped.
    static func census(_ received: [DeliveryRecord], registered: Int) -> String {
        let byEvent = Dictionary(grouping: received, by: { $0.payload.aps.event.rawValue }).mapValues(\.count)
        let last = received.max { $0.payload.aps.timestamp < $1.payload.aps.timestamp }?.payload.aps.contentState
        return "\(registered) of \(followers) started and tokened; received \(byEvent.sorted { $0.key < $1.key }); "
            + "latest state \(last?.status ?? "-"), \(last?.statusText ?? "")"
    }

    /// `body` for `0..<count`, `width` at a time, results in order.
    static func inParallel<T: Sendable>(
        _ count: Int, width: Int = width, _ body: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: [(Int, T)].self) { group in
            for worker in 0..<min(width, count) {
                group.addTask {
                    var results: [(Int, T)] = []
                    for index in stride(from: worker, to: count, by: width) { results.append((index, try await body(index))) }
                    return results
                }
            }
            var all: [(Int, T)] = []
            for try await results in group { all += results }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
