import AsyncHTTPClient
import Foundation
import MatchcastCLI
import MatchcastTesting

/// A feed a benchmark serves to its `matchcast serve` child.
protocol BenchFeed: Sendable {
    var baseURL: String { get }
    func stop() async
}

extension ControlledFeed: BenchFeed {}
extension PollsFeed: BenchFeed {}

/// What the benchmarks that run `matchcast serve` as a child share: a scratch store of the chosen kind, a feed this
/// process serves, serve started on both (polling at the feed's pace, its stdout tapped) and a keep-alive API
/// client for it; all of it stopped and removed however the run ends, with serve's last log lines on a failure.
struct ServeSession<Feed: BenchFeed> {
    struct Settings: Sendable {
        /// Names the temporary folder (`matchcast-bench-<what>-…`).
        var what: String
        var store: BenchStoreKind
        var postgresServer: String?
        var executable: String
        var serveLogLevel: String
        /// serve's `polling.minPollMs` and default interval.
        var pollMs: Int
        /// Concurrent API clients (keep-alive connections).
        var clients: Int
        var interrupted: @Sendable () -> Bool
        /// More of serve's settings, as `MATCHCAST_*` variables.
        var environment: [String: String] = [:]
    }

    let feed: Feed
    let child: ServeChild
    /// The child `sink` started, if any.
    let sinkChild: ServeChild?
    let api: DeviceAPI
    /// The run's temporary folder (serve's working directory and log).
    let directory: URL
    /// serve's store (its scratch PostgreSQL database, when it is one).
    let store: ServeChildStore

    /// Sets the session up, runs `body` on it, tears it down; returns what `body` returned and how serve ended.
    /// `sink` gives serve's sink arguments (default: `--sink stdout`), and may start a child of its own in the
    /// folder, stopped after serve.
    static func run<T>(
        _ settings: Settings, feed startFeed: () async throws -> Feed,
        sink: (URL) async throws -> (arguments: [String], child: ServeChild?) = { _ in (["--sink", "stdout"], nil) },
        _ body: (ServeSession) async throws -> T
    ) async throws -> (value: T, serveExit: String) {
        let directory = try ServeChildStore.folder(settings.what, settings.store)
        var store: ServeChildStore?
        var feed: Feed?
        var child: ServeChild?
        var sinkChild: ServeChild?
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(
                connectionPool: .init(idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.clients)))
        var value: T?
        var failure: (any Error)?
        do {
            let made = try await ServeChildStore.make(settings.store, in: directory, postgresServer: settings.postgresServer)
            store = made
            let started = try await startFeed()
            feed = started
            let (sinkArguments, startedSink) = try await sink(directory)
            sinkChild = startedSink
            let port = try ReservedPort.free()
            let serve = try ServeChild.start(
                executable: settings.executable,
                arguments: [
                    "serve", "--host", "127.0.0.1", "--port", "\(port)", "--store", made.url, "--feed", started.baseURL,
                    "--log-level", settings.serveLogLevel,
                ] + sinkArguments,
                environment: settings.environment.merging([
                    "MATCHCAST_POLLING_MIN_POLL_MS": "\(settings.pollMs)", "MATCHCAST_POLLING_DEFAULT_MS": "\(settings.pollMs)",
                ]) { _, fixed in fixed },
                directory: directory, logName: "serve.log", tap: DeliveryTap())
            child = serve
            let api = DeviceAPI(client: client, base: "http://127.0.0.1:\(port)", interrupted: settings.interrupted)
            value = try await body(ServeSession(
                feed: started, child: serve, sinkChild: startedSink, api: api, directory: directory, store: made))
        } catch {
            failure = error
        }
        // Whatever happened: serve first (so nothing writes to the store), then the rest.
        let exit = await child?.stop() ?? "not started"
        await sinkChild?.stop()
        if failure != nil, let child {
            StandardStreams.err("serve's log (last lines):\n" + child.logTail())
            if let sinkChild { StandardStreams.err("\(sinkChild.process.executableURL?.lastPathComponent ?? "sink")'s log (last lines):\n" + sinkChild.logTail()) }
        }
        try? await client.shutdown()
        await feed?.stop()
        await store?.drop()
        try? FileManager.default.removeItem(at: directory)
        if let failure { throw failure }
        guard let value else { throw CommandFailure("no result") }
        return (value, exit)
    }
}

/// The waits of a benchmark with serve running: each gives up when serve (or the sink's child) exits, a signal came,
/// or the phase took longer than `phaseTimeout`, saying what it was waiting for.
struct ServeWaits: Sendable {
    let child: ServeChild
    /// The sink's own child (`matchcast-fake-apns`), if any.
    let sinkChild: ServeChild?
    let phaseTimeout: Duration
    let interrupted: @Sendable () -> Bool

    /// Polls `condition` every 20 ms until it holds.
    func until(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + phaseTimeout
        while true {
            if (try? await condition()) == true { return }
            try check(what, deadline: deadline)
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Reads serve's deliveries into `tally` until every device has one (the lines stay in the tap).
    func collect(_ tally: inout ServeBenchmark.Tally, what: String) async throws {
        let deadline = ContinuousClock.now + phaseTimeout
        while true {
            let cursor = tally.cursor
            (sinkChild?.tap ?? child.tap).withLines(from: cursor) { tally.absorb($0) }
            if tally.distinct == tally.counts.count { return }
            try check(what + " (\(tally.distinct) so far)", deadline: deadline)
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Throws when the wait for `what` must end.
    func check(_ what: String, deadline: ContinuousClock.Instant) throws {
        if interrupted() { throw CommandFailure("interrupted while waiting for \(what)") }
        if !child.isRunning { throw CommandFailure("serve exited while waiting for \(what)") }
        if let sinkChild, !sinkChild.isRunning { throw CommandFailure("matchcast-fake-apns exited while waiting for \(what)") }
        if ContinuousClock.now >= deadline { throw CommandFailure("timed out after \(phaseTimeout) waiting for \(what)") }
    }
}
