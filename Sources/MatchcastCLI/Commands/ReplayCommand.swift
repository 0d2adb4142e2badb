import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import Synchronization

/// `matchcast replay FILE`: a recorded feed through the whole pipeline on a virtual clock.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recorded feed through the full pipeline on a virtual clock.",
        discussion: """
            Reads a recording (docs/formats.md#recording: one observation per line) and runs it through the same \
            pipeline as live polling: the feed's poll step, the lifecycle of N synthetic followers \
            (each reports its update token right after its start), coalescing, delivery. Deliveries \
            go to the sinks (stdout NDJSON by default). The same file and options give the same bytes \
            on every run and machine. On a terminal a progress bar and a summary go to stderr.

            Examples:
              matchcast import cricsheet $MATCHCAST_REALDATA/cricsheet/1144530.json -o final.ndjson
              matchcast replay final.ndjson --fast --followers 1000 > deliveries.ndjson
              matchcast replay final.ndjson --speed 60 --sink webhook:http://127.0.0.1:9000/hook --webhook-secret whsec_...
              matchcast replay final.ndjson --fast --followers 100000 --sink apns --apns-endpoint https://127.0.0.1:2197 \
                --apns-ca-file ca.pem --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG --apns-team-id DEF123GHIJ

            With --sink apns every follower's tokens are synthetic: point --apns-endpoint at a server that \
            speaks the APNs protocol (a load test), never at Apple. Tokens APNs calls dead end their \
            follower's activity, as in serve.
            """
    )

    @Argument(help: "The recording (NDJSON).")
    var file: String

    @Option(help: "Simulated seconds per real second.")
    var speed: Double?

    @Flag(help: "As fast as possible (the default when --speed is not given).")
    var fast = false

    @Option(help: "Synthetic followers, each with its own tokens.")
    var followers = 1

    @OptionGroup(title: "Sinks (the same for follow, replay and serve)")
    var sinkOptions: SinkOptions

    @Option(help: "A YAML configuration file; only its sink keys are read (sinks, bundleId, webhook.*, apns.*, webpush.*, fcm.*).")
    var config: String?

    @Option(help: "Seed of activity and delivery ids.")
    var seed: UInt64 = 1

    @Option(help: "Send routine (priority 5) changes at most once per this many simulated seconds.")
    var coalesce: Double = 10

    @Option(help: "Send at most this many key events an hour at priority 10, the rest at 5 (iOS's update budget).")
    var highPriorityPerHour = ActivityPolicy.defaultHighPriorityPerHour

    @Option(help: "The app's bundle id.")
    var bundleId: String?

    @Flag(help: "Progress and summary on stderr even when it is not a terminal.")
    var progress = false

    func validate() throws {
        if fast && speed != nil { throw ValidationError("--fast and --speed exclude each other") }
        if let speed, !(speed > 0 && speed <= 1_000_000) { throw ValidationError("--speed must be in (0, 1000000]") }
        guard (0...1_000_000).contains(followers) else { throw ValidationError("--followers must be 0...1000000") }
        guard coalesce >= 0 && coalesce <= 3600 else { throw ValidationError("--coalesce must be 0...3600") }
        guard (0...3600).contains(highPriorityPerHour) else { throw ValidationError("--high-priority-per-hour must be 0...3600") }
    }

    /// The sinks' configuration: defaults < --config < environment < flags.
    func sinkConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> BrokerConfiguration {
        var extra: [String: String] = [:]
        extra["bundleId"] = bundleId
        return try sinkOptions.configuration(configFile: config, extra: extra, environment: environment)
    }

    func run() async throws {
        let configuration = try Self.exitOnBadConfiguration("replay") { () throws(ConfigurationError) in try sinkConfiguration() }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            StandardStreams.err("matchcast replay: cannot read \(file): \(error.localizedDescription)")
            throw ExitCode(1)
        }
        let parse = RecordingReader.read(data)
        for problem in parse.problems {
            StandardStreams.err("matchcast replay: \(file):\(problem.line): \(problem.isFatal ? "" : "warning: ")\(problem.message)")
        }
        if parse.isFatal { throw ExitCode(1) }
        let showProgress = progress || StandardStreams.stderrIsTerminal
        let client = SinkFactory.needsHTTPClient(configuration.sinks) ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        var logger = Logger(label: "matchcast.replay")
        logger.logLevel = .error
        let deadTokens = DeadTokenInbox()
        let sinks: [any DeliverySink]
        do {
            sinks = try SinkFactory(
                configuration: configuration, client: client, logger: logger, stdoutWriteBehind: ReplayRunner.stdoutWriteBehind)
                .makeSinks(deadLetters: { ExplainingDeadLetters(sink: $0, configuration: configuration, command: "replay", limit: 5) },
                           onInvalidToken: deadTokens.report)
        } catch {
            try? await client?.shutdown()
            StandardStreams.err("matchcast replay: \(SinkOptions.message(error))")
            throw ExitCode(2)
        }
        do {
            let summary = try await replay(parse.lines, sinks: sinks, configuration: configuration, deadTokens: deadTokens, logger: logger, showProgress: showProgress)
            SinkFactory.shutdown(sinks)
            if showProgress { Self.printSummary(summary) }
            if deadTokens.deadCount > 0 {
                StandardStreams.err("matchcast replay: \(deadTokens.deadCount) tokens were refused as dead (410, BadDeviceToken); their followers were ended")
            }
        } catch {
            SinkFactory.shutdown(sinks)
            try? await client?.shutdown()
            if let error = error as? ExitCode { throw error }
            StandardStreams.err("matchcast replay: \(error)")
            throw ExitCode(1)
        }
        try await client?.shutdown()
    }

    /// `load()`, or one line naming the flag on stderr and exit code 2.
    static func exitOnBadConfiguration(
        _ command: String, _ load: () throws(ConfigurationError) -> BrokerConfiguration
    ) throws -> BrokerConfiguration {
        do {
            return try load()
        } catch {
            StandardStreams.err("matchcast \(command): \(SinkOptions.message(error))")
            throw ExitCode(2)
        }
    }

    private func replay(
        _ lines: [RecordingLine], sinks: [any DeliverySink], configuration: BrokerConfiguration, deadTokens: DeadTokenInbox,
        logger: Logger, showProgress: Bool
    ) async throws -> ReplaySummary {
        let bundleId = configuration.topicBundleId
        let options = ReplayOptions(
            followers: followers, seed: seed, bundleId: bundleId,
            policy: ActivityPolicy(coalesceInterval: .milliseconds(Int64(coalesce * 1000)), highPriorityPerHour: highPriorityPerHour),
            speed: speed)
        let bar = ProgressBar(enabled: showProgress)
        let summary = try await ReplayRunner(lines: lines, options: options, sinks: sinks, logger: logger, deadTokens: deadTokens)
            .run { bar.update($0) }
        bar.finish()
        return summary
    }

    static func printSummary(_ summary: ReplaySummary) {
        let events = ActivityEvent.allCases.map { "\($0.rawValue) \(summary.deliveriesByEvent[$0, default: 0])" }
        let keys = summary.keyEvents.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }
        StandardStreams.err("observations   \(summary.observations)")
        StandardStreams.err("deliveries     \(summary.deliveries) (\(events.joined(separator: ", ")))")
        StandardStreams.err("key events     \(keys.isEmpty ? "none" : keys.joined(separator: ", "))")
        StandardStreams.err("simulated      \(ProgressBar.clock(summary.simulatedSeconds))")
        StandardStreams.err("wall time      \(String(format: "%.2f s", summary.wallSeconds))")
        for (match, result) in summary.results.sorted(by: { $0.key < $1.key }) {
            StandardStreams.err("result         \(match): \(result)")
        }
    }
}

/// A one-line progress bar on stderr, redrawn at most ten times a second.
final class ProgressBar: Sendable {
    private let enabled: Bool
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ progress: ReplayProgress) {
        guard enabled else { return }
        let now = ContinuousClock.now
        let due = last.withLock { last -> Bool in
            if let previous = last, now - previous < .milliseconds(100), progress.done < progress.total { return false }
            last = now
            return true
        }
        guard due else { return }
        let width = 30
        let filled = progress.total == 0 ? width : width * progress.done / progress.total
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        FileHandle.standardError.write(Data(
            "\r[\(bar)] \(progress.done)/\(progress.total) observations · \(Self.clock(progress.simulatedSeconds)) simulated · \(progress.deliveries) deliveries".utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds)
        return String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
    }
}
