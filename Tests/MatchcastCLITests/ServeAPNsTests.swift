import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
@testable import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle
import Synchronization
import Testing

/// `serve`'s APNs sink as `serve` builds it (flags → configuration → `SinkFactory`), and a broker
/// sending through it to the fake APNs, where dead tokens end activities.
@Suite("serve: the APNs sink, from flags to a dead token", .serialized)
struct ServeAPNsTests {
    static let quiet = Logger(label: "test.serve-apns", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A throwaway folder (inside `ScratchFolder`, gone when the tests end) holding `name` with `text`.
    static func write(_ text: String, named name: String) throws -> String {
        let folder = try ScratchFolder.newFolder("serve-apns")
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// The flags `serve` needs for the apns sink with `keyFile`.
    static func apnsFlags(keyFile: String) -> [String] {
        ["--apns-key-file", keyFile, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId]
    }

    /// Runs `body` with a fresh client, shut down afterwards.
    static func withClient(_ body: (HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static func makeSinks(_ arguments: [String], client: HTTPClient?, relay: DeadTokenRelay = DeadTokenRelay()) throws -> [any DeliverySink] {
        let configuration = try ServeCommand.parse(arguments).loadConfiguration(environment: [:])
        return try SinkFactory(configuration: configuration, client: client, logger: quiet)
            .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, deadTokens: relay)
    }

    @Test("--sink apns --sink stdout builds two sinks, in that order, the APNs one for Apple's production endpoint")
    func twoSinks() async throws {
        let keyFile = try Self.write(P256.Signing.PrivateKey().pemRepresentation, named: "AuthKey_\(APNsFixture.keyId).p8")
        try await Self.withClient { client in
        let sinks = try Self.makeSinks(["--sink", "apns", "--sink", "stdout"] + Self.apnsFlags(keyFile: keyFile), client: client)
        #expect(sinks.map(\.name) == ["apns", "stdout"])
        let apns = try #require(sinks.first as? APNsSink)
        #expect(apns.configuration.resolvedEndpoint == "https://api.push.apple.com")
        #expect(apns.configuration.keyId == APNsFixture.keyId && apns.configuration.teamId == APNsFixture.teamId)
        #expect(apns.configuration.trustRoots == .system)
        #expect(SinkFactory.needsHTTPClient(["stdout", "apns"]) && !SinkFactory.needsHTTPClient(["stdout"]))

        let sandbox = try Self.makeSinks(
            ["--sink", "apns", "--apns-environment", "sandbox"] + Self.apnsFlags(keyFile: keyFile), client: client)
        #expect((sandbox.first as? APNsSink)?.configuration.resolvedEndpoint == "https://api.sandbox.push.apple.com")
        }
    }

    @Test("a bad key or CA file is refused when the sinks are built, naming the key and never quoting the file")
    func badFiles() async throws {
        try await Self.withClient { client in
        // A PEM private key, but P-384: readable, not an APNs key. Its text must not leak.
        let wrongCurve = P384.Signing.PrivateKey().pemRepresentation
        let secretLines = wrongCurve.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        let cases: [(file: String, key: String)] = [
            (try Self.write(wrongCurve, named: "wrong-curve.p8"), "apns.keyFile"),
            (try Self.write("not a key at all", named: "garbage.p8"), "apns.keyFile"),
            (FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID().uuidString).p8").path, "apns.keyFile"),
        ]
        for (file, key) in cases {
            #expect {
                _ = try Self.makeSinks(["--sink", "apns"] + Self.apnsFlags(keyFile: file), client: client)
            } throws: { error in
                guard let error = error as? ConfigurationError else { return false }
                let text = error.description
                return error.key == key && text.contains(file) && !text.contains("\n")
                    && !secretLines.contains { text.contains($0) }
            }
        }
        let keyFile = try Self.write(P256.Signing.PrivateKey().pemRepresentation, named: "good.p8")
        let badCA = try Self.write("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", named: "ca.pem")
        #expect {
            _ = try Self.makeSinks(["--sink", "apns", "--apns-ca-file", badCA] + Self.apnsFlags(keyFile: keyFile), client: client)
        } throws: { error in
            (error as? ConfigurationError)?.key == "apns.caFile"
        }
        }
    }

    @Test("serve --sink apns without a key id exits 2 before starting anything")
    func missingKeyIdExits() async throws {
        let command = try ServeCommand.parse(["--sink", "apns", "--apns-key-file", "/nonexistent.p8", "--apns-team-id", "DEF123GHIJ"])
        #expect {
            _ = try command.loadConfiguration(environment: [:])
        } throws: { error in
            (error as? ConfigurationError)?.key == "apns.keyId"
        }
        do {
            try await command.run()
            Issue.record("serve ran without an APNs key id")
        } catch let exit as ExitCode {
            #expect(exit.rawValue == 2)
        }
    }

    // MARK: The broker, sending to the fake APNs

    static let epoch = 1_800_000_000.0

    /// Advances virtual time, a deadline at a time, until `condition` holds; but only while `idle`
    /// (nothing queued for or on its way to the fake APNs) and the broker's loops all sleep on the clock
    /// (`idleness`), so the match cannot run ahead of real sockets or of a poll still at work. While it
    /// waits on them it naps briefly instead of spinning; the wall-clock limit is only a safety net. With
    /// `advance: false` it only waits.
    static func drive(
        _ clock: ManualClock, idleness: ClockIdleness, idle: () async -> Bool, advance: Bool = true,
        until condition: () async throws -> Bool
    ) async throws {
        let giveUp = ContinuousClock.now + .seconds(240)
        while try await !condition() {
            if advance { await idleness.wait() }
            let wasIdle = await idle()
            for _ in 0..<20 { await Task.yield() }
            if try await condition() { return }
            if advance, wasIdle, await idle(), let deadline = clock.nextDeadline {
                clock.advance(to: deadline)
            } else {
                try await Task.sleep(for: .milliseconds(2))
            }
            try #require(ContinuousClock.now < giveUp, "condition not reached in time")
        }
    }

    static func event(_ notification: FakeAPNsServer.Notification) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(notification.body)) as? [String: Any]
        return (object?["aps"] as? [String: Any])?["event"] as? String
    }

    @Test("a dead update token (410) ends its activity, nothing more goes to it; a dead push-to-start token is forgotten, and what it was to start starts with the next",
          .timeLimit(.minutes(5)))
    func deadTokens() async throws {
        let key = P256.Signing.PrivateKey()
        let keyFile = try Self.write(key.pemRepresentation, named: "AuthKey_\(APNsFixture.keyId).p8")
        try await APNsFixture.withServer(key: key) { server, client in
            let caFile = try server.certificates.writeCAFile()
            // Exactly as serve builds it: flags → configuration → sinks, the relay bound to the broker below.
            let configuration = try ServeCommand.parse([
                "--sink", "apns", "--apns-environment", "sandbox", "--apns-endpoint", server.url, "--apns-ca-file", caFile,
                "--apns-topic", "com.example.scores",
            ] + Self.apnsFlags(keyFile: keyFile)).loadConfiguration(environment: [:])
            let relay = DeadTokenRelay()
            let sinks = try SinkFactory(configuration: configuration, client: client, logger: Self.quiet)
                .makeSinks(deadLetters: { _ in InMemoryDeadLetters() }, deadTokens: relay)
            defer { SinkFactory.shutdown(sinks) }
            let apns = InFlightSink(try #require(sinks.first))

            let rig = try FakeFeedBroker(
                sinks: [apns], deadTokens: relay,
                settings: BrokerSettings(
                    bundleId: configuration.topicBundleId, activityPolicy: ActivityPolicy(coalesceInterval: .seconds(10)),
                    pushToStartSpacing: .seconds(5), seed: 11))
            try await rig.run {
                let (clock, broker, store) = (rig.clock, rig.broker, rig.store)
                let service = broker.service
                let idle: () async -> Bool = { await broker.relay.depth == 0 && apns.isIdle }
                // Idle, four loops sleep: the live list's poll, the relist, the lifecycle ticker, the match's poll.
                let idleness = ClockIdleness(clock: clock, floor: 4)

                // A: its update token is dead. B: all healthy, the control. C: its push-to-start token is dead.
                let (startA, updateA) = (String(repeating: "a1", count: 32), String(repeating: "a2", count: 32))
                let (startB, updateB) = (String(repeating: "b1", count: 32), String(repeating: "b2", count: 32))
                let (startC, nextStartC) = (String(repeating: "c1", count: 32), String(repeating: "c3", count: 32))
                server.fail(token: updateA, with: .unregistered)
                server.fail(token: startC, with: .badDeviceToken)
                let a = try await service.registerDevice(), b = try await service.registerDevice(), c = try await service.registerDevice()
                for (device, token) in [(a, startA), (b, startB), (c, startC)] {
                    try await service.setPushToStartToken(deviceId: device.deviceId, token: token, environment: .sandbox)
            }
            let activityA = try #require(try await service.follow(deviceId: a.deviceId, matchId: "football").activityId)
            let activityB = try #require(try await service.follow(deviceId: b.deviceId, matchId: "football").activityId)
            let activityC = try #require(try await service.follow(deviceId: c.deviceId, matchId: "football").activityId)

            // Kick-off: starts reach A and B; C's start is refused, its token forgotten, and its activity waits again
            // (it never reached the phone) rather than waiting for an update token that cannot come.
            try await Self.drive(clock, idleness: idleness, idle: idle) {
                let starts = Set(server.accepted.filter { Self.event($0) == "start" }.map(\.token))
                let forgotten = await store.pushToStartToken(deviceId: c.deviceId) == nil
                let waiting = await store.activity(id: activityC)?.phase == .waiting
                return starts.isSuperset(of: [startA, startB]) && forgotten && waiting
            }
            #expect(server.accepted.allSatisfy { $0.topic == "com.example.scores.push-type.liveactivity" })
            #expect(server.log.filter { $0.token == startC }.map(\.status) == [400])

            // The apps report their update tokens; A's is dead, so A's activity ends.
            _ = try await service.putActivity(
                activityId: activityA, deviceId: a.deviceId, matchId: "football", updateToken: updateA, environment: nil)
            _ = try await service.putActivity(
                activityId: activityB, deviceId: b.deviceId, matchId: "football", updateToken: updateB, environment: nil)
            try await Self.drive(clock, idleness: idleness, idle: idle) { await store.activity(id: activityA)?.phase == .ended }
            // What was queued before the token was invalidated goes out; after that nothing can be made for it.
            try await Self.drive(clock, idleness: idleness, idle: idle, advance: false) {
                guard await idle() else { return false }
                for _ in 0..<20 { await Task.yield() }
                return await idle()
            }
            let toA = server.log.filter { $0.token == updateA }
            #expect(!toA.isEmpty)
            #expect(toA.allSatisfy { $0.status == 410 && $0.reason == "Unregistered" })
            #expect(try await service.follows(deviceId: a.deviceId).first?.activityId == nil)
            let updatesToBThen = server.accepted.filter { $0.token == updateB }.count

            // C's app reports a fresh push-to-start token: the same activity starts with it, while the match is on.
            try await service.setPushToStartToken(deviceId: c.deviceId, token: nextStartC, environment: .sandbox)
            try await Self.drive(clock, idleness: idleness, idle: idle) {
                server.accepted.contains { $0.token == nextStartC && Self.event($0) == "start" }
            }
            #expect(await store.activity(id: activityC)?.phase == .starting)
            let restart = try #require(server.accepted.first { $0.token == nextStartC })
            #expect(String(decoding: restart.body, as: UTF8.self).contains(activityC), "the start carries the activity's own id")

            // The match goes on to its end: B gets updates and its end, A nothing more.
            try await Self.drive(clock, idleness: idleness, idle: idle) {
                server.accepted.contains { $0.token == updateB && Self.event($0) == "end" }
            }
            #expect(server.accepted.filter { $0.token == updateB }.count > updatesToBThen + 1, "updates went on after A's ended")
            #expect(server.log.filter { $0.token == updateA }.count == toA.count, "nothing more was sent to the dead token")
            #expect(!server.accepted.contains { $0.token == updateA })
            #expect(server.log.filter { $0.token == startC }.count == 1, "nothing more was sent to the forgotten token")
            #expect(await store.pushToStartToken(deviceId: c.deviceId)?.token == nextStartC)
            #expect(await store.pushToStartToken(deviceId: b.deviceId)?.token == startB)

            }
        }
    }
}

/// Passes deliveries on to `base`, counting the batches handed over and not yet returned.
final class InFlightSink: DeliverySink {
    let base: any DeliverySink
    private let inFlight = Mutex(0)

    init(_ base: any DeliverySink) {
        self.base = base
    }

    var name: String { base.name }
    var countsDeliveries: Bool { base.countsDeliveries }
    func takes(_ kind: PushTarget.Kind) -> Bool { base.takes(kind) }
    func takes(_ kind: PushTarget.Kind, topic: String) -> Bool { base.takes(kind, topic: topic) }
    func lastAnswer(token: String) -> TokenAnswers.Answer? { base.lastAnswer(token: token) }
    var isIdle: Bool { inFlight.withLock { $0 == 0 } }

    func deliver(_ batch: [Delivery]) async throws {
        inFlight.withLock { $0 += 1 }
        defer { inFlight.withLock { $0 -= 1 } }
        try await base.deliver(batch)
    }
}
