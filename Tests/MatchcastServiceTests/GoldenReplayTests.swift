import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastTesting
import Testing

/// A recording made by the project from its fake feed is committed with the replay output it must
/// give, byte for byte. Set MATCHCAST_UPDATE_GOLDEN=1 to rewrite both after an intended change.
@Suite("golden replay")
struct GoldenReplayTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let recordingURL = folder.appendingPathComponent("football.recording.ndjson")
    static let outputURL = folder.appendingPathComponent("football.replay.ndjson")
    static let update = ProcessInfo.processInfo.environment["MATCHCAST_UPDATE_GOLDEN"] == "1"

    /// The fake football match as a feed polled every 30 simulated seconds would have answered it.
    static func makeRecording() throws -> Data {
        let feed = try FakeFeed(seed: 1, speed: 1, scenarios: ["football"])
        let duration = feed.timeline("football")!.duration
        var lines: [RecordingLine] = []
        var conditional: [String: String] = [:]
        var t = 0.0
        while t <= duration + 60 {
            let response = feed.response(to: FeedRequest(path: "/matches/football", headers: conditional), elapsed: .seconds(t))
            if let etag = response.headers["etag"] { conditional = ["if-none-match": etag] }
            lines.append(RecordingLine(t: t, request: "/matches/football", response: response))
            t += 30
        }
        return try RecordingWriter.encode(lines)
    }

    /// The recording replayed to two followers: what a sink capturing it was given, with `others` beside it.
    static func deliveries(_ recording: Data, beside others: [any DeliverySink] = []) async throws -> [Delivery] {
        let parse = RecordingReader.read(recording)
        try #require(parse.problems.isEmpty, "\(parse.problems)")
        let sink = CapturingSink()
        _ = try await ReplayRunner(
            lines: parse.lines, options: ReplayOptions(followers: 2, seed: 42), sinks: [sink] + others,
            logger: Logger(label: "golden")
        ).run()
        return sink.deliveries
    }

    /// The recording replayed to two followers, as NDJSON.
    static func replay(_ recording: Data) async throws -> Data { Data(try await deliveries(recording).ndjson) }

    @Test("the committed recording is what the fake feed gives")
    func recordingIsTheFakeFeeds() throws {
        let made = try Self.makeRecording()
        if Self.update { try made.write(to: Self.recordingURL) }
        let committed = try Data(contentsOf: Self.recordingURL)
        #expect(made == committed)
        #expect(made.split(separator: UInt8(ascii: "\n")).count > 200)
    }

    @Test("replaying it gives the committed output, byte for byte")
    func replayIsGolden() async throws {
        let recording = try Data(contentsOf: Self.recordingURL)
        let output = try await Self.replay(recording)
        if Self.update { try output.write(to: Self.outputURL) }
        let expected = try Data(contentsOf: Self.outputURL)
        let same = output == expected  // compared outside #expect so a mismatch does not print 200 KB
        #expect(same, "replay output (\(output.count) bytes) differs from Golden/football.replay.ndjson (\(expected.count) bytes)")
        // What the golden file says is itself sane: each follower's activity starts, ends once.
        let records = try output.split(separator: UInt8(ascii: "\n")).map {
            try JSONDecoder().decode(DeliveryRecord.self, from: Data($0))
        }
        #expect(records.filter { $0.payload.aps.event == .start }.count == 2)
        #expect(records.filter { $0.payload.aps.event == .end }.count == 2)
    }

    @Test("a second sink down for the first batches: the first takes each delivery once, the second the same ones once back")
    func aSinkDownBesideAnother() async throws {
        let down = FlakySink(failingFirst: 3)
        let steady = try await Self.deliveries(try Data(contentsOf: Self.recordingURL), beside: [down])
        // The relay retries only the sink that failed: the other is never handed a batch twice. (Updates queued while
        // a sink is down are superseded by newer ones, latest wins, so neither has every golden line.)
        #expect(Set(steady.map(\.id)).count == steady.count, "a delivery reached the steady sink twice")
        #expect(steady.filter { $0.payload.aps.event == .start }.count == 2)
        #expect(steady.filter { $0.payload.aps.event == .end }.count == 2)
        #expect(down.deliveries == steady, "the sink that was down got \(down.deliveries.count) deliveries, not the same ones in order")
        #expect(down.attempts > 3)
    }

    @Test("two replays give the same bytes")
    func deterministic() async throws {
        let recording = try Data(contentsOf: Self.recordingURL)
        let first = try await Self.replay(recording)
        let second = try await Self.replay(recording)
        let same = first == second
        #expect(same && !first.isEmpty)
    }
}
