import ArgumentParser
import Foundation
import Logging
@testable import MatchcastCLI
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Synchronization
import Testing

/// `matchcast record` and `matchcast import`, run as the CLI parses them: what they write is a recording `replay`
/// accepts, in time order, ending with the match over; bad input is refused naming the file.
@Suite("matchcast record and import: recordings replay accepts")
struct RecordAndImportCommandTests {
    /// A file in a fresh temporary folder, removed after `body`.
    private static func withOutput(_ name: String, _ body: (String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("record-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder.appendingPathComponent(name).path)
    }

    /// The recording at `path`, which must have no problem at all.
    private static func recording(_ path: String) throws -> [RecordingLine] {
        let parse = RecordingReader.read(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(parse.problems.isEmpty, "\(parse.problems)")
        return parse.lines
    }

    /// The match statuses of the recording's answers that carry a match, in order.
    private static func statuses(_ lines: [RecordingLine]) -> [String] {
        lines.compactMap { line in
            guard let body = line.body, let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
            return (object["match"] as? [String: Any])?["status"] as? String
        }
    }

    private static var realData: String? { ProcessInfo.processInfo.environment["MATCHCAST_REALDATA"] }

    /// The fake feed at 600× over HTTP, whose clock moves 0.3 s (three simulated minutes) at each request:
    /// what `record` gets does not depend on how fast the machine lets it poll.
    @Test("record polls a feed until the match is over; every answer is a line, in the order it came", .timeLimit(.minutes(1)))
    func recordTheFakeFeed() async throws {
        let requests = Atomic<Int>(0)
        let feed = try FakeFeed(speed: 600, scenarios: ["football"])
        let server = try await LocalHTTPServer.start(name: "fake feed") { onServerRunning in
            FakeFeedServer.makeApplication(
                feed: feed, port: 0, logger: Logger(label: "record-test", factory: { _ in SwiftLogNoOpLogHandler() }),
                elapsed: { .milliseconds(300) * requests.add(1, ordering: .relaxed).oldValue },
                onServerRunning: onServerRunning)
        }
        do {
            try await recordFootball(from: server.port, served: { requests.load(ordering: .relaxed) })
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func recordFootball(from port: Int, served: () -> Int) async throws {
        try await Self.withOutput("football.ndjson") { path in
            let command = try RecordCommand.parse([
                "--feed", "http://127.0.0.1:\(port)", "--match", "football", "--min-poll-ms", "1", "-o", path,
            ])
            try await command.run()
            let lines = try Self.recording(path)
            #expect(lines.count == served(), "one line per answer the feed gave")
            #expect(lines.allSatisfy { $0.request.hasPrefix("/matches/football") }, "\(lines.map(\.request).prefix(3))")
            #expect(zip(lines, lines.dropFirst()).allSatisfy { $0.t <= $1.t }, "in time order")
            let statuses = Self.statuses(lines)
            #expect(statuses.first == "scheduled", "\(statuses.prefix(3))")
            #expect(statuses.contains("live"), "\(statuses.prefix(5))")
            #expect(!statuses.drop { $0 != "live" }.contains("scheduled"), "never back to scheduled: \(statuses)")
            #expect(statuses.last == "completed", "polled until the match was over: \(statuses.suffix(3))")
        }
    }

    @Test("record stops after --duration when the match goes on", .timeLimit(.minutes(1)))
    func recordForADuration() async throws {
        try await Self.withOutput("short.ndjson") { path in
            let started = ContinuousClock.now
            let command = try RecordCommand.parse(["--feed", "fake?speed=1", "--match", "football", "--duration", "1", "-o", path])
            try await command.run()
            #expect(ContinuousClock.now - started < .seconds(30))
            let statuses = Self.statuses(try Self.recording(path))
            #expect(!statuses.isEmpty && !statuses.contains("completed"), "\(statuses)")
        }
    }

    @Test("bad record input is refused before anything is polled")
    func recordRefusesBadInput() async throws {
        try await Self.withOutput("x.ndjson") { path in
            let badFeed = try RecordCommand.parse(["--feed", "gopher://nowhere", "--match", "m", "-o", path])
            await #expect(throws: ValidationError.self) { try await badFeed.run() }
            let unwritable = try RecordCommand.parse(["--feed", "fake", "--match", "m", "-o", "/nonexistent-folder/x.ndjson"])
            let error = await #expect(throws: ValidationError.self) { try await unwritable.run() }
            #expect(error?.message.contains("/nonexistent-folder/x.ndjson") == true)
        }
    }

    /// Real files, their importer, the request each observation answers and fewer observations than it must have.
    static let imports: [(importer: String, file: String, request: String, atLeast: Int)] = [
        // Two innings of 50 overs, and the super over: some 600 balls.
        ("cricsheet", "cricsheet/1144530.json", "/matches/1144530", 500),
        // One per play, under the id the mlb feed serves it as.
        ("mlb", "mlb/livefeed_744914.json", "/matches/mlb:744914", 50),
    ]

    @Test("import writes one observation per ball or play, every one a 200, the last one the result",
          .enabled(if: RecordAndImportCommandTests.realData != nil, "MATCHCAST_REALDATA is not set"),
          arguments: imports)
    func importRealData(importer: String, file: String, request: String, atLeast: Int) async throws {
        let input = try #require(Self.realData) + "/" + file
        try await Self.withOutput("\(importer).ndjson") { path in
            var command = try ImportCommand.parseAsRoot([importer, input, "-o", path])
            try command.run()
            let lines = try Self.recording(path)
            #expect(lines.count > atLeast)
            #expect(lines.allSatisfy { $0.status == 200 && $0.request == request }, "\(lines.first?.request ?? "-")")
            #expect(Self.statuses(lines).last == "completed")
        }
    }

    @Test("import refuses a file it cannot read or understand, naming it")
    func importRefusesBadFiles() async throws {
        try await Self.withOutput("bad.json") { path in
            try Data("{\"not\": \"cricsheet\"}".utf8).write(to: URL(fileURLWithPath: path))
            for (arguments, named) in [
                (["cricsheet", path + ".missing", "-o", path + ".out"], path + ".missing"),
                (["cricsheet", path, "-o", path + ".out"], path),
                (["mlb", path, "-o", path + ".out"], path),
                (["tennis-pbp", path, "--id", "1", "-o", path + ".out"], path),
            ] {
                var command = try ImportCommand.parseAsRoot(arguments)
                let error = #expect(throws: ValidationError.self, "\(arguments)") { try command.run() }
                #expect(error?.message.contains(named) == true, "\(error?.message ?? "-")")
            }
            #expect(!FileManager.default.fileExists(atPath: path + ".out"), "nothing written")
        }
    }
}
