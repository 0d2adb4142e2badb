#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import MatchcastTesting

/// `matchcast-bench`: benchmarks outside the test suite, in an executable of their own so that the shipped
/// `matchcast` links none of the fakes they run against.
public struct BenchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "matchcast-bench",
        abstract: "Benchmarks of Matchcast's pipeline and of `matchcast serve` (outside the test suite).",
        subcommands: [
            FanoutBenchCommand.self, ServeBenchCommand.self, PollsBenchCommand.self, SoakCommand.self, FakeAPNsBenchCommand.self,
            WebPushCryptoBenchCommand.self, APILatencyBenchCommand.self,
        ]
    )

    public init() {}
}

/// `matchcast-bench fanout`: one match update fanned out to N activities, timed per update.
struct FanoutBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Time one match update fanned out to N Live Activities through the real pipeline.",
        discussion: """
            Setup (not timed): N devices with push-to-start tokens follow one live football match \
            through LifecycleManager; the match kicks off (N starts go out) and every device reports \
            its activity's update token. Then K goals (key events, priority 10) are ingested one by \
            one, each timed from calling ingest to the sink returning for the last batch ("last \
            byte written"; for the webhook: acknowledged) and to ingest returning (activities \
            persisted too). Coalescing is off, so every update goes to every activity.

            Sinks: devnull (NDJSON to /dev/null), stdout (NDJSON to fd 1: run it with > /dev/null), \
            webhook (signed POSTs to a receiver in this process on 127.0.0.1 that only reads), \
            apns (one HTTP/2 request per delivery, through the APNs sink's connection pool, to the fake \
            APNs of MatchcastTesting on two event-loop threads of its own, in a child process (`matchcast-bench \
            fake-apns`) or, with --apns-fake inline, in this process: TLS, ALPN h2, 1000 streams per \
            connection, the provider token checked once per connection, counts kept per apns-id). \
            The APNs mode adds a line per update: requests answered, update→APNs latency p50/p99, CPU per \
            request (getrusage: this process, and the fake's own when it runs apart), connections, answers, \
            and duplicates (requests for an apns-id that already had a final answer; must be 0). --apns-error-mix makes 10 % \
            of update tokens answer 410 and 1 % answer 429 to the first try of each notification (retried \
            after the sink's backoff, 1 s). \
            fcm and webpush: Android or web devices, each registering an FCM token or a Web Push subscription in \
            the place of a push-to-start token (no update tokens: the start leaves each activity active), their \
            pushes sent by the FCM sink or the Web Push sink (routed by target, as serve runs them; each push \
            encrypted for its browser and VAPID-signed) to the fake FCM or the fake push service of MatchcastTesting \
            in this process (the push service decrypts every push), with a line saying what the fake took and \
            whether each device got each push exactly once (must be). --concurrency: requests in flight (64). \
            The table goes to stderr. Build with -c release for meaningful figures.

            Stores: memory (InMemoryStore), sqlite (a temporary file), postgres (a scratch database created on the \
            server of --postgres-url or MATCHCAST_POSTGRES_URL and dropped afterwards). A comma list (or all) runs \
            the same benchmark on each store, one after the other, and prints one table with a row per store and \
            update, then a summary line per store. See docs/performance.md.

            Examples:
              swift build -c release
              .build/release/matchcast-bench fanout --sink devnull
              .build/release/matchcast-bench fanout --sink stdout > /dev/null
              .build/release/matchcast-bench fanout --sink webhook --batch 1000
              .build/release/matchcast-bench fanout --sink apns
              .build/release/matchcast-bench fanout --sink apns --apns-error-mix
              .build/release/matchcast-bench fanout --sink fcm --activities 20000 --store all
              .build/release/matchcast-bench fanout --sink webpush --activities 5000
              .build/release/matchcast-bench fanout --store all --postgres-url postgres://postgres@127.0.0.1:5432/postgres
            """
    )

    enum SinkKind: String, ExpressibleByArgument, CaseIterable {
        case devnull, stdout, webhook, apns, fcm, webpush
    }

    @Option(help: "Activities following the match.")
    var activities = 100_000

    @Option(help: "Where deliveries go: \(SinkKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var sink: SinkKind = .devnull

    @Option(help: "Timed updates (goals).")
    var updates = 3

    @Option(help: """
        Deliveries per sink call (devnull, stdout; default: the whole fan-out in one call) or per \
        webhook request (default: the sink's own, 500).
        """)
    var batch: Int?

    @Option(help: "Webhook requests in flight at once, or APNs streams per connection (default: the sink's own, 4 and 100).")
    var concurrency: Int?

    @Option(help: "APNs connections at most (default: the sink's own, 4).")
    var apnsConnections: Int?

    @Flag(help: "APNs: 10 % of update tokens answer 410, 1 % answer 429 to the first try of each notification.")
    var apnsErrorMix = false

    @Flag(help: """
        After each setup phase, give the allocator's free memory back to the system (glibc malloc_trim) and print \
        the RSS again: what the broker holds, without the space the setup's freed memory left.
        """)
    var trimAfterSetup = false

    @Flag(help: """
        Restore setup: make the activity ids a millisecond apart, in the order they are stored, \
        as a deployment's follows made over time are; a fan-out then walks its activities in the order they lie in \
        memory. Without it every id is made in the same virtual millisecond, and that order is random (the worst case).
        """)
    var idsInCreationOrder = false

    enum FakePlace: String, ExpressibleByArgument, CaseIterable {
        case process, inline
    }

    @Option(help: """
        APNs: where the fake APNs runs: process (a child process, `matchcast-bench fake-apns`, as a separate \
        server would) or inline (this process, on event-loop threads of its own).
        """)
    var apnsFake: FakePlace = .process

    @Option(help: """
        The store behind LifecycleManager: memory (InMemoryStore, as `serve --store memory`), sqlite \
        (a temporary file) or postgres (a scratch database); a comma list, or all, runs each in turn. \
        (default: \(Self.defaultStore))
        """, transform: BenchStoreList.parse)
    var store = Self.defaultStore
    static let defaultStore = BenchStoreList([.memory])

    @Option(name: .customLong("postgres-url"), help: """
        The PostgreSQL server for --store postgres (default: MATCHCAST_POSTGRES_URL). The benchmark creates a \
        database of its own there and drops it afterwards; the URL's own database is not touched.
        """)
    var postgresURL: String?

    @Option(help: """
        How the waiting activities are made: follow (LifecycleManager.follow per device: O(N²), use \
        N ≤ 5000) or restore (saved to the store at once, then LifecycleManager.restore()). \
        Default: follow up to 2000 activities, restore above.
        """)
    var setup: FanoutBenchmark.SetupPath?

    @Option(help: "Seed of activity and delivery ids.")
    var seed: UInt64 = 1

    @Option(help: "Apps the devices belong to, in turn (docs/apps.md; devnull, stdout and webhook sinks).")
    var apps = 1

    func validate() throws {
        guard (1...10_000_000).contains(activities) else { throw ValidationError("--activities must be 1...10000000") }
        guard (1...1000).contains(updates) else { throw ValidationError("--updates must be 1...1000") }
        if let batch, batch < 1 { throw ValidationError("--batch must be positive") }
        if batch != nil, sink == .apns { throw ValidationError("--batch does not apply to apns (one request per delivery)") }
        if batch != nil, sink == .fcm || sink == .webpush { throw ValidationError("--batch does not apply to fcm and webpush (one request per delivery)") }
        if sink == .fcm || sink == .webpush, activities > 200_000 {
            throw ValidationError("--sink \(sink.rawValue) keeps every message its fake received: use --activities ≤ 200000")
        }
        if let concurrency, !(1...(sink == .apns ? 1000 : 256)).contains(concurrency) {
            throw ValidationError("--concurrency must be 1...256 (1...1000 for apns)")
        }
        if let apnsConnections, !(1...64).contains(apnsConnections) { throw ValidationError("--apns-connections must be 1...64") }
        if (apnsConnections != nil || apnsErrorMix || apnsFake != .process), sink != .apns { throw ValidationError("--apns-* options need --sink apns") }
        guard (1...16).contains(apps) else { throw ValidationError("--apps must be 1...16") }
        if apps > 1, ![.devnull, .stdout, .webhook].contains(sink) {
            throw ValidationError("--apps applies to the devnull, stdout and webhook sinks (each app's own push-service sink is not faked here)")
        }
        if sink == .stdout, isatty(1) == 1 {
            throw ValidationError("--sink stdout writes every delivery to stdout: redirect it (> /dev/null)")
        }
    }

    func run() async throws {
        let postgresServer: String?
        do {
            postgresServer = try store.postgresServer(option: postgresURL, environment: ProcessInfo.processInfo.environment)
        } catch {
            StandardStreams.err("matchcast-bench fanout: \(error)")
            throw ExitCode(2)
        }
        var logger = Logger(label: "matchcast.bench")
        logger.logLevel = .error
        StandardStreams.err("load average (1, 5, 15 min) at the start: \(BenchTable.loadAverage)")
        var runs: [(store: BenchStoreKind, setup: FanoutBenchmark.Setup, rows: [FanoutBenchmark.Row])] = []
        var duplicates = 0
        let mode = sink.rawValue + (batch.map { " b=\($0)" } ?? "") + (concurrency.map { " c=\($0)" } ?? "")
            + (apnsConnections.map { " n=\($0)" } ?? "") + (apnsErrorMix ? " mix" : "")
            + (sink == .apns && apnsFake == .inline ? " inline" : "") + (apps > 1 ? " apps=\(apps)" : "")
        for kind in store.kinds {
            if store.kinds.count > 1 { StandardStreams.err("store \(kind.rawValue):") }
            let resources: BenchResources
            do {
                resources = try await BenchResources.make(
                    sink: sink, store: kind, postgresServer: postgresServer, batch: batch, concurrency: concurrency,
                    apnsConnections: apnsConnections, apnsFake: apnsFake, activities: activities, logger: logger)
            } catch {
                StandardStreams.err("matchcast-bench fanout: store \(kind.rawValue): \(error)")
                throw ExitCode(1)
            }
            let report = resources.apnsReport
            let errorMix = apnsErrorMix
            let result: (setup: FanoutBenchmark.Setup, rows: [FanoutBenchmark.Row])
            do {
                let benchmark = FanoutBenchmark(
                    options: FanoutBenchmark.Options(
                        activities: activities, updates: updates, seed: seed,
                        setup: setup ?? (activities <= 2000 ? .follow : .restore), trimAfterSetup: trimAfterSetup,
                        idsInCreationOrder: idsInCreationOrder,
                        beforeTimedUpdates: {
                            if errorMix { report?.server.failShare(invalid: 0.10, throttled: 0.01) }
                            report?.begin()
                        },
                        afterUpdate: { update, started in report?.updateDone(update, started: started) },
                        addresses: resources.addresses, apps: apps),
                    store: resources.store, sink: resources.sink, logger: logger)
                // A PostgreSQL store's pool runs for as long as the benchmark does.
                result = try await withStoreRunning(resources.store) { try await benchmark.run() }
            } catch {
                await resources.close()
                StandardStreams.err("matchcast-bench fanout: store \(kind.rawValue): \(error)")
                throw ExitCode(1)
            }
            let received = resources.receiver?.totals
            duplicates += report?.close().duplicates ?? 0
            if let direct = resources.directCheck() {
                StandardStreams.err(direct.line)
                duplicates += direct.wrong
            }
            await resources.close()
            runs.append((kind, result.setup, result.rows))
            if store.kinds.count > 1 {
                BenchTable.print(mode: mode, store: kind.rawValue, rows: result.rows)
            }
            report?.print()
            if let received {
                StandardStreams.err(String(
                    format: "receiver: %d requests, %.1f MB read", received.requests, Double(received.bytes) / 1_000_000))
            }
        }

        if store.kinds.count > 1 { StandardStreams.err("\nall stores, side by side:") }
        BenchTable.print(runs: runs.map { (mode, $0.store.rawValue, $0.rows) })
        for run in runs {
            StandardStreams.err(BenchTable.summary(store: run.store.rawValue, setup: run.setup, rows: run.rows))
        }
        StandardStreams.err("load average (1, 5, 15 min) at the end: \(BenchTable.loadAverage) on \(ProcessInfo.processInfo.activeProcessorCount) cores")
        if duplicates > 0 {
            StandardStreams.err("matchcast-bench fanout: \(duplicates) duplicate or missing pushes at the fake push service")
            throw ExitCode(1)
        }
        let rows = runs.flatMap(\.rows)
        let failed = rows.reduce(0) { $0 + $1.failures }
        let short = rows.filter { $0.deliveries != $0.activities }
        if failed > 0 || !short.isEmpty {
            StandardStreams.err("matchcast-bench fanout: \(failed) deliveries failed; \(short.count) updates reached fewer than \(activities) activities")
            throw ExitCode(1)
        }
    }
}

/// The sink, store, receiver and client a run uses, and their closing.
private struct BenchResources {
    var sink: MeasuringSink
    var store: any MatchcastStore
    var receiver: DrainingReceiver?
    var apnsServer: (any FakeAPNsProbe)?
    var apnsReport: APNsBenchReport?
    var client: HTTPClient?
    var descriptor: Int32?
    var storePath: String?
    var scratch: ScratchPostgresDatabase?
    /// `--sink fcm` / `webpush`: each device's address, and the fake that takes its pushes.
    var addresses: [String]?
    var fcmServer: FakeFCMServer?
    var pushService: FakePushService?
    var webPushSink: WebPushSink?
    /// Timed updates plus the kick-off: what each device should have got, exactly once each.
    var expectedPerDevice = 0

    static func make(
        sink kind: FanoutBenchCommand.SinkKind, store storeKind: BenchStoreKind, postgresServer: String?,
        batch: Int?, concurrency: Int?, apnsConnections: Int?, apnsFake: FanoutBenchCommand.FakePlace, activities: Int,
        logger: Logger
    ) async throws -> BenchResources {
        var resources = BenchResources(sink: MeasuringSink(inner: StdoutSink(), chunk: nil), store: InMemoryStore())
        do {
            try await resources.start(
                sink: kind, store: storeKind, postgresServer: postgresServer, batch: batch, concurrency: concurrency,
                apnsConnections: apnsConnections, apnsFake: apnsFake, activities: activities, logger: logger)
            return resources
        } catch {
            // Whatever was started (a server, a client) is stopped before the error goes up.
            await resources.close()
            throw error
        }
    }

    /// Opens the store and the sink (and what the sink talks to), noting each as it is made.
    private mutating func start(
        sink kind: FanoutBenchCommand.SinkKind, store storeKind: BenchStoreKind, postgresServer: String?,
        batch: Int?, concurrency: Int?, apnsConnections: Int?, apnsFake: FanoutBenchCommand.FakePlace, activities: Int,
        logger: Logger
    ) async throws {
        switch storeKind {
        case .memory:
            self.store = try await StoreURL("memory").makeStore()  // as `serve --store memory` opens it
        case .sqlite:
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("matchcast-bench-\(getpid()).sqlite").path
            self.storePath = path
            self.store = try SQLiteStore(path: path)
        case .postgres:
            guard let postgresServer else { throw BenchSetupError("--store postgres needs --postgres-url") }
            let scratch = try await ScratchPostgresDatabase.create(serverURL: postgresServer)
            self.scratch = scratch
            var quiet = logger
            quiet.logLevel = .critical
            self.store = try await PostgresStore.open(scratch.configuration, logger: quiet)
        }
        switch kind {
        case .devnull:
            let descriptor = openDevNull()
            guard descriptor >= 0 else { throw CommandFailure("cannot open /dev/null") }
            self.descriptor = descriptor
            self.sink = MeasuringSink(inner: StdoutSink(fileDescriptor: descriptor), chunk: batch)
        case .stdout:
            self.sink = MeasuringSink(inner: StdoutSink(fileDescriptor: 1), chunk: batch)
        case .apns:
            // The fake's provider-token check needs the key pair; ids as in the APNs tests.
            let key = P256.Signing.PrivateKey()
            let (keyId, teamId) = ("ABC123DEFG", "DEF123GHIJ")
            // The fake gets its own two event-loop threads, in a process of its own by default (as a separate
            // server would); the sink runs on the shared client's (the process-wide singleton group).
            let server: any FakeAPNsProbe
            switch apnsFake {
            case .process:
                server = try ChildProcessFakeAPNs(
                    executable: BenchExecutables.own, publicKeyDER: key.publicKey.derRepresentation.base64EncodedString(),
                    keyId: keyId, teamId: teamId, threads: 2)
            case .inline:
                server = InProcessFakeAPNs(server: try await FakeAPNsServer.start(
                    publicKey: key.publicKey, keyId: keyId, teamId: teamId, maxConcurrentStreams: 1000, recording: false, threads: 2))
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            self.apnsServer = server
            self.client = client
            var configuration = APNsSinkConfiguration(
                key: .pem(key.pemRepresentation), keyId: keyId, teamId: teamId, environment: .sandbox,
                endpoint: server.url, trustRoots: .pem(server.caPEM))
            if let concurrency { configuration.maxConcurrentRequests = concurrency }
            if let apnsConnections { configuration.maxConnections = apnsConnections }
            let counter = InvalidCounter()
            let apns = try APNsSink(
                configuration: configuration, client: client, deadLetters: InMemoryDeadLetters(),
                onInvalidToken: { _, _ in counter.increment() },
                logger: logger)
            let report = APNsBenchReport(server: server, sink: apns, invalidReports: counter, separate: apnsFake == .process)
            self.apnsReport = report
            self.sink = MeasuringSink(inner: apns, chunk: nil)
        case .webhook:
            let receiver = try await DrainingReceiver.start()
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            self.receiver = receiver
            self.client = client
            var configuration = WebhookSinkConfiguration(url: receiver.url, secret: try WebhookSecret.random())
            if let batch { configuration.maxBatch = batch }
            if let concurrency { configuration.maxConcurrentRequests = concurrency }
            let webhook = try WebhookSink(
                configuration: configuration, client: client, deadLetters: InMemoryDeadLetters(), logger: logger)
            self.sink = MeasuringSink(inner: webhook, chunk: nil)
        case .fcm:
            // The fake FCM in this process: it checks each message's access token and records it.
            let server = try await FakeFCMServer.start(
                publicKey: FCMFixture.key.publicKey, clientEmail: FCMFixture.clientEmail, projectId: FCMFixture.projectId)
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            self.fcmServer = server
            self.client = client
            addresses = (0..<activities).map { DirectAddress.fcm(String(format: "bench-fcm:%07d", $0)).stored }
            let fcm = try FCMSink(
                configuration: FCMSinkConfiguration(
                    serviceAccount: .json(try FCMFixture.serviceAccountJSON(key: FCMFixture.key, tokenURI: server.tokenURI)),
                    recipient: .deliveryTargets, endpoint: server.url, maxConcurrentRequests: concurrency ?? 64),
                client: client, deadLetters: InMemoryDeadLetters(), logger: logger)
            self.sink = MeasuringSink(inner: fcm, chunk: nil)
        case .webpush:
            // The fake push service in this process: it checks each VAPID token and decrypts each push.
            let service = try await FakePushService.start()
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            self.pushService = service
            self.client = client
            let vapidKey = P256.Signing.PrivateKey()
            let publicKey = Base64URL.encode(vapidKey.publicKey.x963Representation)
            addresses = try (0..<activities).map { _ in
                let json = service.subscribe(applicationServerKey: publicKey).json
                return DirectAddress.webPush(try WebPushMessage.Subscription(json: json).canonicalJSON).stored
            }
            let webPush = try WebPushSink(
                configuration: WebPushSinkConfiguration(
                    recipient: .deliveryTargets, vapid: try VAPIDCredentials(privateKey: vapidKey, subject: "mailto:bench@example.com"),
                    waitsForSends: true, maxConcurrentRequests: concurrency ?? WebPushSinkConfiguration.routedConcurrency),
                client: client, deadLetters: InMemoryDeadLetters(), logger: logger)
            self.webPushSink = webPush
            self.sink = MeasuringSink(inner: webPush, chunk: nil)
        }
    }

    /// `--sink fcm` / `webpush`: what the fake took, and how many devices did not get each push exactly once.
    func directCheck() -> (line: String, wrong: Int)? {
        if let fcmServer {
            let perToken = Dictionary(grouping: fcmServer.messages, by: \.token)
            let wrong = perToken.count(where: { Set($0.value.map { $0.data["mc_ts"] ?? "" }).count != $0.value.count })
                + max(0, (addresses?.count ?? 0) - perToken.count)
            return ("fake FCM: \(fcmServer.messages.count) messages to \(perToken.count) tokens, "
                + "\(fcmServer.problems.count) refused, \(wrong) tokens without exactly one of each push", wrong)
        }
        if let pushService {
            let delivered = pushService.delivered
            let perBrowser = Dictionary(grouping: delivered, by: { $0.subscriberId ?? "" })
            let wrong = perBrowser.count(where: { pushes in
                Set(pushes.value.compactMap { ($0.json?["data"] as? [String: Any])?["ts"] as? Int }).count != pushes.value.count
            }) + max(0, (addresses?.count ?? 0) - perBrowser.count)
            let problems = pushService.log.count(where: { !$0.problems.isEmpty })
            return ("fake push service: \(delivered.count) pushes decrypted for \(perBrowser.count) browsers, "
                + "\(problems) refused, \(wrong) browsers without exactly one of each push", wrong)
        }
        return nil
    }

    func close() async {
        apnsReport?.sink.shutdown()
        webPushSink?.shutdown()
        await fcmServer?.stop()
        await pushService?.stop()
        try? await client?.shutdown()
        await receiver?.stop()
        await apnsServer?.stop()
        if let descriptor { closeDescriptor(descriptor) }
        if let storePath {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
        }
        await scratch?.drop()
    }
}

private func openDevNull() -> Int32 {
    open("/dev/null", O_WRONLY)
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

extension FanoutBenchmark.SetupPath: ExpressibleByArgument {}

/// The results table, on stderr (stdout may be the sink).
enum BenchTable {
    /// Columns: `build ms` = `ingest` called → the sink first called (lifecycles run, deliveries
    /// built); `sink ms` = from there to the sink returning for the last batch; `fan-out→last byte`
    /// = both; `CPU ms` = process CPU time (all threads) over the same span, well below it when
    /// other work had the cores; `deliveries/s` = deliveries / fan-out→last byte; `sink-only/s` = deliveries / sink ms;
    /// `ingest total` adds persisting; `payloads` = distinct payload buffers (1: built once per update).
    /// `/proc/loadavg`'s first three fields: other work on the machine skews the figures.
    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func print(mode: String, store: String, rows: [FanoutBenchmark.Row]) {
        print(runs: [(mode, store, rows)])
    }

    /// One table, a row per store and update, the stores in the order they ran.
    static func print(runs: [(mode: String, store: String, rows: [FanoutBenchmark.Row])]) {
        let header = ["mode", "store", "activities", "update", "started (UTC)", "build ms", "sink ms", "fan-out→last byte ms", "CPU ms", "deliveries/s",
                      "sink-only/s", "ingest total ms", "payload B", "payloads", "sink calls", "RSS MB", "peak MB"]
        var lines = [header]
        for (mode, store, rows) in runs {
            for row in rows {
                lines.append([
                    mode, store, "\(row.activities)", "#\(row.update)", clockTime(row.startedAt),
                    FanoutBenchmark.milliseconds(row.build),
                    FanoutBenchmark.milliseconds(row.fanOut - row.build),
                    FanoutBenchmark.milliseconds(row.fanOut),
                    FanoutBenchmark.milliseconds(row.cpuToLastByte),
                    String(format: "%.0f", row.deliveriesPerSecond),
                    String(format: "%.0f", Double(row.deliveries) / max((row.fanOut - row.build).seconds, 1e-9)),
                    FanoutBenchmark.milliseconds(row.ingest),
                    "\(row.payloadBytes)", "\(row.distinctPayloads)", "\(row.sinkCalls)",
                    String(format: "%.0f", Double(row.rss.current) / 1_048_576),
                    String(format: "%.0f", Double(row.rss.peak) / 1_048_576),
                ])
            }
        }
        printAligned(lines, textColumns: 2)
    }

    /// `HH:MM:SS.mmm` in UTC.
    static func clockTime(_ date: Date) -> String {
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds / 1000
        return String(format: "%02d:%02d:%02d.%03d", seconds / 3600 % 24, seconds / 60 % 60, seconds % 60, milliseconds % 1000)
    }

    /// `lines` (the header first) on stderr in aligned columns: the first `textColumns` to the left, numbers to the right.
    static func printAligned(_ lines: [[String]], textColumns: Int) {
        guard let header = lines.first else { return }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        for line in lines {
            let cells = line.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column < textColumns ? cell + pad : pad + cell
            }
            StandardStreams.err(cells.joined(separator: "  "))
        }
    }

    /// `<store>: per update median … ms, worst … ms (fan-out→last byte); median … deliveries/s; setup: kick-off of N starts … ms,
    /// N update tokens registered … ms`.
    static func summary(store: String, setup: FanoutBenchmark.Setup, rows: [FanoutBenchmark.Row]) -> String {
        let times = rows.map(\.fanOut).sorted()
        let rates = rows.map(\.deliveriesPerSecond).sorted()
        let n = rows.first?.activities ?? 0
        guard !times.isEmpty else { return "\(store): no updates" }
        let ms = FanoutBenchmark.milliseconds
        return "\(store): per update median \(ms(median(times))) ms, worst \(ms(times.last!)) ms (fan-out→last byte); "
            + "median \(String(format: "%.0f", median(rates))) deliveries/s; "
            + "setup: kick-off of \(n) starts \(ms(setup.kickOff)) ms, \(n) update tokens registered \(ms(setup.updateTokens)) ms"
    }

    /// The middle value of sorted values (the mean of the two middle ones for an even count).
    static func median(_ sorted: [Duration]) -> Duration {
        let count = sorted.count
        return count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
    }

    static func median(_ sorted: [Double]) -> Double {
        let count = sorted.count
        guard count > 0 else { return 0 }
        return count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
    }
}
