import ArgumentParser
import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastFeeds

/// `matchcast record`: polls one match and writes every observation as a recording.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record a feed's answers for one match (docs/formats.md#recording), for replay.",
        discussion: """
            Polls the match at the interval the feed asks for and writes each answer (time, request, \
            status, headers, body; 304s without a body) until the match is final or --duration ends.

            Example:
              matchcast record --feed http://127.0.0.1:8090 --match cricket-t20 -o t20.ndjson
            """
    )

    @Option(help: "The feed: a base URL, fake[?speed=N&seed=S], mlb, mlb:BASE, nhl, nhl@BASE or espn:{sport}/{league}[@BASE].")
    var feed: String

    @Option(help: "The match id.")
    var match: String

    @Option(name: [.short, .customLong("output")], help: "The recording to write.")
    var output: String

    @Option(help: "Stop after this many seconds even if the match is not final.")
    var duration: Double?

    @Option(help: "Never poll more often than this many milliseconds (default 2000; 20 for the fake feed).")
    var minPollMs: Int?

    func run() async throws {
        let spec: FeedSpec
        do {
            spec = try FeedSpec(parsing: feed)
        } catch {
            throw ValidationError(error.description)
        }
        guard FileManager.default.createFile(atPath: output, contents: nil),
              let handle = FileHandle(forWritingAtPath: output)
        else { throw ValidationError("cannot write \(output)") }
        defer { try? handle.close() }
        let client = spec.needsHTTPClient ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        do {
            try await record(spec: spec, client: client, handle: handle)
        } catch {
            try? await client?.shutdown()
            throw error
        }
        try await client?.shutdown()
    }

    private func record(spec: FeedSpec, client: HTTPClient?, handle: FileHandle) async throws {
        let clock = ContinuousClock()
        let isFake = if case .fake = spec { true } else { false }
        let minPoll = Duration.milliseconds(minPollMs ?? (isFake ? 20 : 2000))
        let transport = RecordingTransport(
            upstream: try spec.makeTransport(client: client, clock: clock), writer: RecordingWriter(fileHandle: handle),
            clock: clock)
        let source = MatchSource(matchId: match, transport: transport, clock: clock,
                                 policy: PollTimingPolicy(minInterval: minPoll, backoffBase: max(minPoll, .milliseconds(500))))
        let poller = Poller(source: source, clock: clock) { result in
            if case .failed(let error) = result.outcome {
                StandardStreams.err("matchcast record: \(error); retrying in \(String(format: "%.1fs", Double(result.delay.components.seconds)))")
            }
        }
        if let duration {
            _ = try? await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await poller.run() }
                group.addTask { try await clock.sleep(for: .milliseconds(Int64(duration * 1000))) }
                try await group.next()
                group.cancelAll()
            }
        } else {
            await poller.run()
        }
    }
}
