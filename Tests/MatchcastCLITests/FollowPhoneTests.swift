import Crypto
import Foundation
import MatchcastTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 16: `matchcast follow --sink apns` drives one phone's Live Activity through the fake APNs
/// (TLS, HTTP/2, JWT verified), as a real child process: Ctrl-C is a real SIGINT. The fake feed runs at 1000×
/// (a football match in about five seconds): at 3000× a loaded machine's first poll could already find the match
/// over, and a follow that never saw it live sends nothing, which is right but tests nothing.
@Suite("follow --sink apns: a match on one phone, through the fake APNs", .serialized)
struct FollowPhoneTests {
    static let topic = "com.example.scores"
    static let pushToStart = String(repeating: "5a", count: 40)
    static let update = String(repeating: "7c", count: 32)

    /// A `matchcast follow` child process, its stderr in a file.
    final class Follow: @unchecked Sendable {
        let process = Process()
        let stderrURL: URL

        init(_ arguments: [String], folder: URL) throws {
            let binary = try #require(MatchcastProcess.binary, "matchcast is not built beside the tests")
            process.executableURL = binary
            process.arguments = ["follow"] + arguments
            process.currentDirectoryURL = folder
            stderrURL = folder.appendingPathComponent("follow-\(UUID().uuidString).log")
            _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: stderrURL)
            try process.run()
        }

        var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

        func interrupt() { _ = Glibc.kill(process.processIdentifier, SIGINT) }

        /// The exit status, once it exited; fails (and kills it) after `limit`.
        func exitStatus(within limit: Duration = .seconds(60)) async throws -> Int32 {
            let deadline = ContinuousClock.now + limit
            while process.isRunning {
                if ContinuousClock.now > deadline {
                    _ = Glibc.kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                    Issue.record("follow did not exit in time; stderr:\n\(stderr)")
                    return -1
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return process.terminationStatus
        }
    }

    /// A fresh folder, the key file, and the fake APNs; `body` gets the flags pointing follow at it.
    static func withFakeAPNs(_ body: (FakeAPNsServer, URL, [String]) async throws -> Void) async throws {
        let key = P256.Signing.PrivateKey()
        let folder = try ScratchFolder.newFolder("follow-phone")
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("AuthKey_\(APNsFixture.keyId).p8")
        try Data(key.pemRepresentation.utf8).write(to: keyFile)
        try await APNsFixture.withServer(key: key) { server, _ in
            let caFile = try server.certificates.writeCAFile(in: folder)
            let flags = [
                "--sink", "apns", "--apns-endpoint", server.url, "--apns-ca-file", caFile, "--apns-environment", "sandbox",
                "--apns-key-file", keyFile.path, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId,
                "--apns-topic", topic, "--state-dir", folder.appendingPathComponent("state").path, "--coalesce", "0",
            ]
            try await body(server, folder, flags)
        }
    }

    static func aps(_ body: [UInt8]) -> [String: Any] {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        return object?["aps"] as? [String: Any] ?? [:]
    }

    static func waitUntil(_ what: String, within limit: Duration = .seconds(60), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            try #require(ContinuousClock.now < deadline, "timed out waiting for \(what)")
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The log must never hold a whole token.
    static func expectRedacted(_ stderr: String) {
        #expect(!stderr.contains(pushToStart) && !stderr.contains(update), "a whole token in stderr:\n\(stderr)")
    }

    @Test("--update-token: an activity the app started gets every update and the end, from scheduled to final",
          .timeLimit(.minutes(2)))
    func updateTokenRoute() async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            let follow = try Follow(["football", "--feed", "fake?speed=1000", "--update-token", Self.update] + flags, folder: folder)
            #expect(try await follow.exitStatus() == 0, "stderr:\n\(follow.stderr)")
            let accepted = server.accepted
            #expect(accepted.allSatisfy { $0.token == Self.update && $0.topic == Self.topic + ".push-type.liveactivity" })
            let events = accepted.map { Self.aps($0.body)["event"] as? String ?? "?" }
            #expect(events.count > 3 && events.first == "update" && events.last == "end", "\(events)")
            #expect(events.filter { $0 == "end" }.count == 1 && !events.contains("start"))
            let states = accepted.compactMap { (Self.aps($0.body)["content-state"] as? [String: Any])?["status"] as? String }
            // The first update shows what the feed showed at the first poll: at 1000× the kick-off is 0.12 s after
            // the feed starts, which a busy machine (CI runs every test at once) can pass before that poll.
            #expect(["scheduled", "live"].contains(states.first) && states.contains("live"), "\(states)")
            #expect(server.channelRequests.isEmpty, "no channel on the update-token route")
            #expect(server.duplicates == 0)
            Self.expectRedacted(follow.stderr)
        }
    }

    @Test("--push-to-start-token: started on the phone naming a new channel, updates and end broadcast on it, the channel deleted",
          .timeLimit(.minutes(2)))
    func channelRoute() async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            // 300×: the match lasts about 20 s, so that a follow process starved by the whole suite on two cores still
            // polls between its start and its end (at 1000× a starved one once saw only the start and the end).
            let follow = try Follow(["football", "--feed", "fake?speed=300", "--push-to-start-token", Self.pushToStart] + flags, folder: folder)
            #expect(try await follow.exitStatus() == 0, "stderr:\n\(follow.stderr)")
            let channel = try #require(server.createdChannels.first)
            #expect(server.createdChannels.count == 1)
            let starts = server.accepted
            #expect(starts.count == 1 && starts.allSatisfy { $0.token == Self.pushToStart })
            let start = Self.aps(try #require(starts.first).body)
            #expect(start["event"] as? String == "start")
            #expect(start["input-push-channel"] as? String == channel)
            let broadcasts = server.broadcasts
            #expect(broadcasts.allSatisfy { $0.channelId == channel && $0.bundleId == Self.topic })
            let events = broadcasts.map { Self.aps($0.body)["event"] as? String ?? "?" }
            #expect(events.count > 2 && events.last == "end" && events.filter { $0 == "end" }.count == 1, "\(events)")
            #expect(server.deletedChannels == [channel] && server.liveChannels.isEmpty)
            let notes = folder.appendingPathComponent("state/follow-channels").path
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: notes)) ?? []).isEmpty, "the channel's note is removed")
            Self.expectRedacted(follow.stderr)
        }
    }

    @Test("Ctrl-C mid-match ends the activity at once and deletes the channel; --leave-running leaves both",
          .timeLimit(.minutes(2)), arguments: ["update-token", "channel", "leave-running"])
    func ctrlC(route: String) async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            let phone = route == "update-token" ? ["--update-token", Self.update] : ["--push-to-start-token", Self.pushToStart]
            let extra = route == "leave-running" ? ["--leave-running"] : []
            // 60x: kick-off after two seconds, full time after two minutes.
            let follow = try Follow(["football", "--feed", "fake?speed=60"] + phone + extra + flags, folder: folder)
            try await Self.waitUntil("the activity to be live") {
                server.accepted.contains { (Self.aps($0.body)["content-state"] as? [String: Any])?["status"] as? String == "live" }
            }
            let interrupted = Date()
            follow.interrupt()
            #expect(try await follow.exitStatus() == 0, "stderr:\n\(follow.stderr)")
            let ends = (server.accepted.map(\.body) + server.broadcasts.map(\.body)).map(Self.aps).filter { $0["event"] as? String == "end" }
            if route == "leave-running" {
                #expect(ends.isEmpty)
                #expect(server.deletedChannels.isEmpty && server.liveChannels.count == 1, "the channel is left for the activity")
                #expect(follow.stderr.contains("--leave-running"))
                return
            }
            #expect(ends.count == 1)
            let dismissal = try #require(ends.first?["dismissal-date"] as? Int)
            #expect(abs(Double(dismissal) - interrupted.timeIntervalSince1970) < 30, "dismissed now, not in 15 minutes")
            #expect(server.liveChannels.isEmpty, "no channel is left behind")
            if route == "channel" {
                #expect(server.broadcasts.last.map { Self.aps($0.body)["event"] as? String } == "end")
                #expect(server.deletedChannels == server.createdChannels && server.createdChannels.count == 1)
            } else {
                #expect(server.accepted.last?.token == Self.update)
            }
            #expect(follow.stderr.contains("the activity was ended"))
            Self.expectRedacted(follow.stderr)
        }
    }

    @Test("a channel a crashed run left for the same match is deleted on the next run", .timeLimit(.minutes(2)))
    func leftoverChannel() async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            let leftover = server.addChannel()
            let notes = folder.appendingPathComponent("state/follow-channels")
            try FileManager.default.createDirectory(at: notes, withIntermediateDirectories: true)
            try Data((leftover + "\n").utf8).write(to: notes.appendingPathComponent("sandbox-\(Self.topic)-football"))
            let follow = try Follow(["football", "--feed", "fake?speed=1000", "--push-to-start-token", Self.pushToStart] + flags, folder: folder)
            #expect(try await follow.exitStatus() == 0, "stderr:\n\(follow.stderr)")
            #expect(server.deletedChannels.first == leftover)
            #expect(server.createdChannels.count == 2 && server.liveChannels.isEmpty)
            #expect(follow.stderr.contains("a previous run left"))
        }
    }

    @Test("APNs refusing the phone's token is explained: BadDeviceToken suggests the other environment", .timeLimit(.minutes(2)))
    func badDeviceToken() async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            server.fail(token: Self.pushToStart, with: .badDeviceToken)
            let follow = try Follow(["football", "--feed", "fake?speed=1000", "--push-to-start-token", Self.pushToStart] + flags, folder: folder)
            #expect(try await follow.exitStatus() == 1, "stderr:\n\(follow.stderr)")
            #expect(follow.stderr.contains("BadDeviceToken") && follow.stderr.contains("--apns-environment production"), "\(follow.stderr)")
            #expect(server.log.filter { $0.token == Self.pushToStart }.count == 1, "nothing more to a refused token")
            #expect(server.liveChannels.isEmpty)
            Self.expectRedacted(follow.stderr)
        }
    }

    @Test("410 on the update token ends the activity: nothing more is sent, follow says why and exits 1", .timeLimit(.minutes(2)))
    func unregistered() async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            server.fail(token: Self.update, with: .unregistered)
            let follow = try Follow(["football", "--feed", "fake?speed=1000", "--update-token", Self.update] + flags, folder: folder)
            #expect(try await follow.exitStatus() == 1, "stderr:\n\(follow.stderr)")
            #expect(server.log.filter { $0.token == Self.update }.map(\.status) == [410])
            #expect(follow.stderr.contains("Unregistered") && follow.stderr.contains("the activity is over"), "\(follow.stderr)")
            Self.expectRedacted(follow.stderr)
        }
    }

    @Test("bad input is one line naming the flag, exit code 2, before any polling", arguments: [
        (["--push-to-start-token", "not-hex"], "--push-to-start-token"),
        (["--push-to-start-token", "abcd"], "--push-to-start-token"),
        (["--update-token", String(repeating: "a", count: 63)], "--update-token"),
        (["--push-to-start-token", pushToStart, "--apns-key-id", "SHORT"], "--apns-key-id"),
        (["--push-to-start-token", pushToStart, "--apns-team-id", "lower case"], "--apns-team-id"),
        (["--push-to-start-token", pushToStart, "--apns-key-file", "/nonexistent/AuthKey.p8"], "--apns-key-file"),
        ([String](), "--push-to-start-token"),
    ])
    func badInput(arguments: [String], flag: String) async throws {
        try await Self.withFakeAPNs { server, folder, flags in
            // Flags given later win, so the bad value overrides the good one in `flags`.
            let follow = try Follow(["football", "--feed", "fake?speed=1000"] + flags + arguments, folder: folder)
            #expect(try await follow.exitStatus(within: .seconds(30)) == 2)
            let lines = follow.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains(flag) == true, "\(follow.stderr)")
            #expect(server.requestCount == 0 && server.channelRequests.isEmpty)
        }
    }
}
