import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastTesting
import Testing

/// Two real `matchcast serve` replicas on one PostgreSQL database, polling one `matchcast fake-feed` process over
/// HTTP, at the default lease timings. The replica holding a live match's lease is killed with SIGKILL in the middle
/// of a fan-out: the other takes the lease over once it expires (within 5 s of the kill), sends what the dead one left
/// in the outbox and goes on, so every activity still gets its updates and its `end`, nothing starts twice, and a
/// delivery seen twice is the same delivery. A replica stopped with SIGTERM hands its match over at once.
///
/// Each replica sends to a webhook receiver of its own, so every delivery says which replica sent it.
@Suite("Two replicas, one killed mid-match", .serialized)
struct ReplicaFailoverTests {
    static let followers = 24
    /// The longest a dead replica's live match may go without a delivery from the survivor, at default settings.
    static let takeoverBound = Duration.seconds(5)
    /// The match whose owner is killed; the other is followed too, so the survivor keeps its own match going.
    static let killedMatch = "football"
    static let otherMatch = "tennis-bo3"

    @Test(
        "the survivor takes over a killed replica's match: every activity gets updates and its end, nothing starts twice",
        .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage),
        .timeLimit(.minutes(10)))
    func killTheOwnerOfALiveMatch() async throws {
        // The feed outlives the replicas, as a real one would; at 60× a football match lasts about 2 minutes.
        let config = """
            polling:
              minPollMs: 100
            activities:
              coalesceSeconds: 1
              pushToStartSpacingSeconds: 1
            """
        try await Self.withTwoReplicas("replica-failover", feedSpeed: 60, config: config) { replicas in
            // Slow receivers: a fan-out is always part-way through when the owner is killed.
            for replica in replicas { replica.receiver.answer(after: .milliseconds(150)) }
            let (a, b) = (replicas[0], replicas[1])
            try await #require(eventually(within: 90, every: .milliseconds(50)) {
                guard try await a.api.matchIsLive(Self.killedMatch) else { return false }
                return try await b.api.matchIsLive(Self.otherMatch)
            }, "both matches are live")

            // Followers spread over both APIs: each device registers on one replica, gives its push-to-start
            // token and follows through the other, so every change has to reach the polling replica through the store.
            // All at once, as phones would: one after another, on a loaded machine, they took a whole half.
            let devices = try await withThrowingTaskGroup(of: (String, BrokerAPI.Device, String).self) { group in
                for index in 0..<Self.followers {
                    group.addTask {
                        let (first, second) = index % 2 == 0 ? (a, b) : (b, a)
                        let match = index % 3 == 2 ? Self.otherMatch : Self.killedMatch
                        let device = try await first.api.register(index: index)
                        let token = MatchcastProcess.token(0xaa, index)
                        try await second.api.setPushToStartToken(device, token: token)
                        try await second.api.follow(device, match: match)
                        return (token, device, match)
                    }
                }
                var devices: [String: (device: BrokerAPI.Device, match: String)] = [:]  // by push-to-start token
                for try await (token, device, match) in group { devices[token] = (device, match) }
                return devices
            }
            var registered: [String: String] = [:]  // activity id → match
            var started: Set<String> = []  // push-to-start tokens; a second activity for one is left unregistered
            try await #require(eventually(within: 120, every: .milliseconds(50)) {
                for start in replicas.flatMap(\.receiver.received)
                where start.payload.aps.event == .start && registered[start.activityId] == nil {
                    let (device, match) = try #require(devices[start.target.value], "a start to a token no device holds")
                    guard started.insert(start.target.value).inserted else { continue }
                    let replica = replicas[(device.index / 2) % 2]
                    try await replica.api.putActivity(
                        start.activityId, device: device, match: match,
                        updateToken: MatchcastProcess.token(0xbb, device.index))
                    registered[start.activityId] = match
                }
                return started.count == Self.followers
            }, "every follower's activity started")

            // The replica polling the match, killed as soon as one of its update fan-outs is on its way, while the
            // match is in play with fifteen minutes or more before half-time or full time as last delivered (a few
            // minutes behind the feed with these slow receivers): a kill just before half-time would leave the
            // survivor nothing to send for the break's 15 minutes (15 s at 60×), however fast it took over.
            func holder(of match: String) -> BrokerReplica? {
                replicas.compactMap { replica in replica.leaseTaken(of: match).map { (replica, $0.time) } }.max { $0.1 < $1.1 }?.0
            }
            var owner: BrokerReplica?
            try await #require(eventually(within: 120, every: .milliseconds(20)) {
                owner = holder(of: Self.killedMatch)
                guard let owner, let other = replicas.first(where: { $0 !== owner }) else { return false }
                // The other replica's receiver idle, so whatever it records after the kill was sent after it.
                let updates = owner.receiver.received.filter { $0.matchId == Self.killedMatch && $0.payload.aps.event == .update }
                guard let latest = updates.last, Self.minutesBeforeBreak(latest.payload.aps.contentState) >= 15 else { return false }
                return owner.receiver.arrivals > owner.receiver.requests && other.receiver.arrivals == other.receiver.requests
            }, "a replica logged that it holds \(Self.killedMatch)'s lease and sends its updates")
            let victim = try #require(owner)
            let survivor = try #require(replicas.first { $0 !== victim })
            let beforeKill = replicas.flatMap(\.receiver.received)
            let otherHolder = holder(of: Self.otherMatch)?.name ?? "nobody"
            try #require(!beforeKill.contains { $0.payload.aps.event == .end }, "the matches were still on at the kill")
            victim.process.kill()
            let killedAt = Date()
            let killInstant = ContinuousClock.now
            let survivorAtKill = survivor.receiver.received.count
            // From now on the survivor's receiver answers at once, so it does not slow the takeover it measures.
            survivor.receiver.answer(after: .zero)

            // Takeover: the survivor's first delivery for the match, and its log line saying it took the match over.
            try await #require(eventually(within: 120, every: .milliseconds(20)) {
                survivor.receiver.received.dropFirst(survivorAtKill).contains { $0.matchId == Self.killedMatch }
            }, "the survivor sent a delivery for \(Self.killedMatch) after the kill")
            let firstDelivery = ContinuousClock.now - killInstant
            // Over the bound, what the survivor logged since the kill says where the time went.
            let survivorLog = firstDelivery <= Self.takeoverBound ? "" : survivor.logLines.filter { $0.time >= killedAt }
                .map { "\($0.time.timeIntervalSince(killedAt).formatted(.number.precision(.fractionLength(2)))) s \($0.message) \($0.fields)" }
                .joined(separator: "\n")
            #expect(firstDelivery <= Self.takeoverBound, "the survivor's first delivery came \(firstDelivery) after the kill; its log since:\n\(survivorLog)")
            try await #require(eventually(within: 60, every: .milliseconds(50)) {
                (survivor.leaseTaken(of: Self.killedMatch)?.time ?? .distantPast) > killedAt
            }, "the survivor logged that it holds \(Self.killedMatch)'s lease")
            let takeover = try #require(survivor.leaseTaken(of: Self.killedMatch))
            #expect(takeover.message == "match taken over", "the survivor logged '\(takeover.message)'")
            #expect(try await survivor.metric("matchcast_lease_changes_total", label: #"reason="taken_over""#) >= 1)

            let everyEnd = try await eventually(within: 300, every: .milliseconds(50)) {
                Set(replicas.flatMap(\.receiver.received).filter { $0.payload.aps.event == .end }.map(\.activityId))
                    .isSuperset(of: registered.keys)
            }
            let received = replicas.flatMap(\.receiver.received)
            let afterKill = Array(survivor.receiver.received.dropFirst(survivorAtKill))
            let ended = Set(received.filter { $0.payload.aps.event == .end }.map(\.activityId))
            #expect(everyEnd, "ends for \(ended.count) of \(registered.count) activities")
            let updatedAfterKill = Set(afterKill.filter { $0.payload.aps.event == .update }.map(\.activityId))
            let stale = registered.filter { !updatedAfterKill.contains($0.key) }
            #expect(stale.isEmpty, "no update after the kill for \(stale.count) activities: \(stale.values.sorted())")

            // A delivery seen twice is the same delivery; one state of one activity has one id.
            let duplicates = auditDeliveryIds(received)

            // Nothing starts twice: no activity but the registered ones, one start and one end each.
            let starts = received.filter { $0.payload.aps.event == .start }
            #expect(Set(starts.map(\.activityId)) == Set(registered.keys), "a start for an activity nobody registered")
            for event in [ActivityEvent.start, .end] {
                let twice = Dictionary(grouping: received.filter { $0.payload.aps.event == event }, by: \.activityId)
                    .filter { Set($0.value.map(\.id)).count > 1 }
                #expect(twice.isEmpty, "\(twice.count) activities got two different \(event) deliveries")
            }

            let counts = replicas.map { "\($0.name) \($0.receiver.received.count)" }.joined(separator: ", ")
            print(
                """
                replica-failover: killed \(victim.name) holding \(Self.killedMatch) (default lease TTL; \
                \(Self.otherMatch) held by \(otherHolder)); \
                \(survivor.name) logged '\(takeover.message)' \(Self.seconds(takeover.time.timeIntervalSince(killedAt))) \
                after the kill, its first \(Self.killedMatch) delivery arrived after \(Self.seconds(firstDelivery)); \
                \(received.count) deliveries (\(counts)), \(beforeKill.count) before the kill, \
                \(duplicates) repeated with the same id, \(registered.count) activities
                """)
        }
    }

    @Test(
        "a replica stopped with SIGTERM releases its match and the other takes it at once, long before its lease would expire",
        .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage),
        .timeLimit(.minutes(5)))
    func stopTheOwnerOfAMatch() async throws {
        // Leases of a minute: only the release, heard through NOTIFY, can move the match within the bound (the
        // look for unowned matches runs every 5 s).
        try await Self.withTwoReplicas("replica-handover", feedSpeed: 10, arguments: ["--lease-ttl", "60"]) { replicas in
            let device = try await replicas[0].api.register(index: 0)
            try await replicas[0].api.setPushToStartToken(device, token: MatchcastProcess.token(0xaa, 0))
            try await replicas[0].api.follow(device, match: Self.killedMatch)
            var holder: BrokerReplica?
            try await #require(eventually(within: 60, every: .milliseconds(50)) {
                holder = replicas.first { $0.leaseTaken(of: Self.killedMatch) != nil }
                return holder != nil
            }, "a replica holds \(Self.killedMatch)")
            let owner = try #require(holder)
            let survivor = try #require(replicas.first { $0 !== owner })

            let stoppedAt = Date()
            await owner.process.stop()
            try await #require(eventually(within: 60, every: .milliseconds(20)) {
                survivor.leaseTaken(of: Self.killedMatch) != nil
            }, "the survivor took \(Self.killedMatch)")
            let taken = try #require(survivor.leaseTaken(of: Self.killedMatch))
            let handover = taken.time.timeIntervalSince(stoppedAt)
            // Released, not expired: the survivor acquired a free lease rather than taking over a dead one's.
            #expect(taken.message == "match lease acquired", "the survivor logged '\(taken.message)'")
            #expect(handover < 2, "the survivor took the match \(Self.seconds(handover)) after SIGTERM")
            #expect(owner.logLines.contains { $0.message == "replica let its matches go" })
            print("replica-handover: \(owner.name) stopped with SIGTERM; \(survivor.name) acquired \(Self.killedMatch) \(Self.seconds(handover)) later")
        }
    }

    /// Two `serve` replicas (`replica-a`, `replica-b`, started together as a rollout would start them: one
    /// migrates, the other waits) on a scratch database, polling one `fake-feed` process at `feedSpeed`, each with
    /// `config` (YAML) and `arguments`; both healthy before `body` runs. Everything is stopped and dropped afterwards;
    /// the processes' logs are printed when `body` fails.
    static func withTwoReplicas(
        _ label: String, feedSpeed: Int, config: String? = nil, arguments extra: [String] = [],
        _ body: ([BrokerReplica]) async throws -> Void
    ) async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try await ScratchPostgresDatabase.create()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let feedPort = try MatchcastProcess.freePort()
        let feed = try MatchcastProcess.start(
            binary, ["fake-feed", "--port", "\(feedPort)", "--speed", "\(feedSpeed)", "--seed", "3"], log: directory, name: "feed")
        var arguments = [
            "--store", database.url, "--feed", "http://127.0.0.1:\(feedPort)", "--admin-key", CrashRecoveryTests.adminKey,
        ] + extra
        var replicas: [BrokerReplica] = []
        func cleanUp() async {
            for replica in replicas { await replica.stop() }
            await feed.stop()
            try? await client.shutdown()
            do { try await database.drop() } catch { print("\(label): could not drop \(database.name): \(error)") }
        }
        do {
            if let config {
                let file = directory.appendingPathComponent("matchcast.yaml")
                try config.write(to: file, atomically: true, encoding: .utf8)
                arguments += ["--config", file.path]
            }
            for name in ["replica-a", "replica-b"] {
                replicas.append(try await BrokerReplica.start(binary, name: name, arguments: arguments, client: client, log: directory))
            }
            for replica in replicas { try await replica.waitUntilHealthy() }
            try await body(replicas)
        } catch {
            print(MatchcastProcess.logs(directory))
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    /// Regulation minutes left in the half a football content-state shows in play ("1H", "23'": 22); 0 in a break,
    /// in stoppage time or when it shows no clock.
    static func minutesBeforeBreak(_ content: ContentState) -> Int {
        guard content.status == "live", let clock = content.clock, !clock.contains("+"),
              let minute = Int(clock.prefix(while: \.isNumber)) else { return 0 }
        switch content.period {
        case "1H": return max(0, 45 - minute)
        case "2H": return max(0, 90 - minute)
        default: return 0
        }
    }

    static func seconds(_ duration: Duration) -> String {
        seconds(Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18)
    }

    static func seconds(_ value: TimeInterval) -> String {
        String(format: "%.2f s", value)
    }
}
