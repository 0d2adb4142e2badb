import ArgumentParser
import Crypto
import Foundation
@testable import MatchcastCLI
import MatchcastService
import MatchcastTesting
import Testing

/// Issue 16: `replay --sink apns` fans a recorded match out to synthetic followers through the APNs
/// sink, against any server that speaks the APNs protocol; here the fake APNs (TLS, HTTP/2, JWT checked)
/// with an error mix of dead tokens (410) and throttling (429).
@Suite("replay --sink apns: a recorded match to 10,000 followers through the fake APNs", .serialized)
struct ReplayAPNsTests {
    /// The football recording the golden replay test keeps beside its expected output.
    static let goldenRecording = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MatchcastServiceTests/Golden/football.recording.ndjson")

    /// Four observations of the committed football recording, a minute apart: scheduled, kick-off, the
    /// goal, full time. Per follower: a start, a key-event update, an end (a short match keeps the suite fast).
    static func shortRecording() throws -> String {
        let lines = try String(contentsOf: Self.goldenRecording, encoding: .utf8).split(separator: "\n")
        let picked = try [0, 4, 78, 222].enumerated().map { position, index in
            var line = try #require(try JSONSerialization.jsonObject(with: Data(lines[index].utf8)) as? [String: Any])
            line["t"] = position * 60
            return String(decoding: try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), as: UTF8.self)
        }
        #expect(picked.last?.contains(#""status":"completed""#) == true)
        return try ServeAPNsTests.write(picked.joined(separator: "\n") + "\n", named: "football-short.ndjson")
    }

    static func object(_ body: [UInt8]) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]) ?? [:]
    }

    @Test("every follower is settled exactly once (its end accepted, or its token dead), with no duplicate request",
          .timeLimit(.minutes(3)))
    func errorMix() async throws {
        let followers = 10_000
        let key = P256.Signing.PrivateKey()
        let keyFile = try ServeAPNsTests.write(key.pemRepresentation, named: "AuthKey_\(APNsFixture.keyId).p8")
        let recording = try Self.shortRecording()
        try await APNsFixture.withServer(key: key) { server, _ in
            server.failShare(invalid: 0.03, throttled: 0.05)
            let caFile = try server.certificates.writeCAFile()
            let started = ContinuousClock.now
            try await ReplayCommand.parse([
                recording, "--fast", "--followers", String(followers), "--sink", "apns",
                "--apns-endpoint", server.url, "--apns-ca-file", caFile, "--apns-environment", "sandbox",
                "--apns-key-file", keyFile, "--apns-key-id", APNsFixture.keyId, "--apns-team-id", APNsFixture.teamId,
                "--apns-max-connections", "2",
            ]).run()
            let elapsed = ContinuousClock.now - started

            #expect(server.duplicates == 0, "a request was sent again after its final answer")
            let counts = server.statusCounts
            #expect(counts[429, default: 0] > 0 && counts[410, default: 0] > 0, "the error mix was not met: \(counts)")
            #expect(counts.keys.allSatisfy { [200, 410, 429].contains($0) }, "unexpected answers: \(counts)")

            // Requests per token, in order; accepted notifications by apns-id.
            var byToken: [String: [FakeAPNsServer.Exchange]] = [:]
            for exchange in server.log { byToken[exchange.token ?? "", default: []].append(exchange) }
            var accepted: [String: FakeAPNsServer.Notification] = [:]
            for notification in server.accepted { accepted[notification.apnsID] = notification }
            func event(_ exchange: FakeAPNsServer.Exchange) -> String? {
                guard exchange.status == 200, let id = exchange.apnsID, let notification = accepted[id] else { return nil }
                return (Self.object(notification.body)["aps"] as? [String: Any])?["event"] as? String
            }

            var settled = (ended: 0, deadStart: 0, deadUpdate: 0)
            for index in 0..<followers {
                let pushToStart = SyntheticToken.make(for: "push-to-start:" + String(format: "replay-device-%06d", index))
                let toStart = byToken[pushToStart] ?? []
                let finals = toStart.filter { $0.status != 429 }
                try #require(finals.count == 1, "follower \(index): \(finals.count) final answers to its start")
                if finals[0].status == 410 {
                    settled.deadStart += 1
                    continue
                }
                let start = try #require(toStart.last.flatMap { $0.apnsID }.flatMap { accepted[$0] })
                let aps = Self.object(start.body)["aps"] as? [String: Any]
                let activityId = try #require((aps?["attributes"] as? [String: Any])?["activityId"] as? String)
                let update = SyntheticToken.make(for: "update:" + activityId)
                let toUpdate = byToken[update] ?? []
                let dead = toUpdate.filter { $0.status == 410 }
                let ends = toUpdate.filter { event($0) == "end" }
                try #require(dead.count + ends.count == 1, "follower \(index): \(dead.count) 410s and \(ends.count) ends")
                #expect(toUpdate.last?.status != 429 && (toUpdate.last.map { $0.status == 410 || event($0) == "end" } ?? false),
                        "follower \(index): something went to its token after it was settled")
                if dead.isEmpty { settled.ended += 1 } else { settled.deadUpdate += 1 }
            }
            #expect(settled.ended + settled.deadStart + settled.deadUpdate == followers)
            #expect(settled.deadStart > 0 && settled.deadUpdate > 0 && settled.ended > followers / 2, "\(settled)")
            let rate = Double(server.requestCount) / elapsed.seconds
            print("replay --sink apns: \(server.requestCount) requests in \(elapsed), \(Int(rate))/s; \(settled)")
        }
    }
}
