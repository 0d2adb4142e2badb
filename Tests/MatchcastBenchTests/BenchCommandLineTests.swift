import Foundation
import Testing

/// `matchcast-bench` run as its users run it, a child process with a small load: each command checks its own run
/// (exit 1 when a delivery is missing, duplicated or failed; an APNs request answered twice) and prints its tables,
/// and these tests hold it to both. Sizes are tiny: what is measured here is that the commands work, not their figures.
@Suite("matchcast-bench from the command line: fanout, polls, serve and soak with a small load")
struct BenchCommandLineTests {
    /// The PostgreSQL server of the test run (`.ci/run` starts one), if any.
    private static var postgresServer: String? {
        ProcessInfo.processInfo.environment["MATCHCAST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The lines of `text` that start with `prefix`.
    private static func lines(_ text: String, startingWith prefix: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.hasPrefix(prefix) }
    }

    /// The integer after `label` in `text` (`"dead tokens reported: 7"` → 7).
    private static func number(after label: String, in text: String) -> Int? {
        guard let range = text.range(of: label) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test("fanout on the memory store and SQLite: a row per store and update, side by side, and a summary each",
          .timeLimit(.minutes(2)))
    func fanoutDevNullOnTwoStores() async throws {
        let run = try await BenchChild.run(["fanout", "--activities", "40", "--updates", "2", "--store", "memory,sqlite"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("all stores, side by side:"))
        // Each store's two rows are printed after its run and again in the table of all stores.
        #expect(Self.lines(run.errors, startingWith: "devnull  memory").count == 4)
        #expect(Self.lines(run.errors, startingWith: "devnull  sqlite").count == 4)
        #expect(run.errors.contains("memory: per update median") && run.errors.contains("sqlite: per update median"))
        #expect(run.errors.contains("kick-off of 40 starts"))
    }

    @Test("fanout with the devices of two apps: every update reaches every activity, on memory and SQLite",
          .timeLimit(.minutes(2)))
    func fanoutTwoApps() async throws {
        let run = try await BenchChild.run(["fanout", "--activities", "40", "--updates", "2", "--store", "memory,sqlite", "--apps", "2"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(Self.lines(run.errors, startingWith: "devnull apps=2  memory").count == 4, "\(run.errors)")
        #expect(Self.lines(run.errors, startingWith: "devnull apps=2  sqlite").count == 4)
    }

    @Test("fanout to the webhook sink: every delivery acknowledged by the receiver, in batches of the size asked",
          .timeLimit(.minutes(2)))
    func fanoutWebhook() async throws {
        let run = try await BenchChild.run(["fanout", "--activities", "30", "--updates", "1", "--sink", "webhook", "--batch", "10"])
        #expect(run.status == 0, "\(run.errors)")
        // 30 starts and 30 updates, 10 to a request: at least 6 requests (the starts may go in smaller ones).
        let requests = try #require(Self.number(after: "receiver: ", in: run.errors), "\(run.errors)")
        #expect(requests >= 6)
        #expect(Self.lines(run.errors, startingWith: "webhook b=10").count == 1)
    }

    @Test("fanout to APNs through the fake in a child process, 10 % of tokens dead: no request answered twice",
          .timeLimit(.minutes(2)))
    func fanoutAPNsWithErrors() async throws {
        let run = try await BenchChild.run(["fanout", "--activities", "60", "--updates", "2", "--sink", "apns", "--apns-error-mix"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(Self.lines(run.errors, startingWith: "apns update #").count == 2)
        #expect(Self.number(after: "already had a final answer): ", in: run.errors) == 0, "\(run.errors)")
        // The dead tokens are reported as such (about 6 of 60; at least one, with the seed fixed).
        let dead = try #require(Self.number(after: "dead tokens reported: ", in: run.errors), "\(run.errors)")
        #expect(dead >= 1 && dead <= 60)
    }

    @Test("fanout to APNs with the fake in the same process", .timeLimit(.minutes(2)))
    func fanoutAPNsInline() async throws {
        let run = try await BenchChild.run(["fanout", "--activities", "20", "--updates", "1", "--sink", "apns", "--apns-fake", "inline"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("fake APNs (in this process)"))
        #expect(Self.number(after: "already had a final answer): ", in: run.errors) == 0, "\(run.errors)")
    }

    @Test("fanout on PostgreSQL: a scratch database of its own, dropped afterwards",
          .enabled(if: Self.postgresServer != nil, "MATCHCAST_POSTGRES_URL is not set: no PostgreSQL to run on"),
          .timeLimit(.minutes(2)))
    func fanoutPostgres() async throws {
        let server = try #require(Self.postgresServer)
        let run = try await BenchChild.run(["fanout", "--activities", "30", "--updates", "1", "--store", "postgres"], postgres: server)
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("postgres: per update median"))
    }

    @Test("polls with every answer a change: a row for the store, each change delivered", .timeLimit(.minutes(2)))
    func pollsChanging() async throws {
        let run = try await BenchChild.run([
            "polls", "--store", "memory", "--matches", "4", "--poll-ms", "200", "--seconds", "2", "--warmup", "0",
            "--probe-seconds", "1", "--changing",
        ])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("every one a change, delivered to the match's follower"))
        let row = try #require(Self.lines(run.errors, startingWith: "memory ").first, "\(run.errors)")
        let cells = row.split(separator: " ", omittingEmptySubsequences: true)
        // store, matches, polls/s, 304 %, serve CPU, CPU µs/poll, µs/match·s, … with API µs/poll, RSS before, after,
        // RSS KB/match, anon KB/match, follow, unfollow, deliveries, WAL KB/s, setup s: 4 matches, none answered 304,
        // some delivered, no WAL (not PostgreSQL); the probe window's CPU a poll printed.
        #expect(cells.count == 17 && cells[1] == "4" && cells[3] == "0.0" && cells[15] == "-", "\(row)")
        #expect((Int(cells[14]) ?? 0) > 0, "\(row)")
        #expect(Double(cells[11]) != nil && Double(cells[7]) != nil, "\(row)")
    }

    @Test("api-latency on the memory store and SQLite: a row per store and call, each over the devices after the warm-up",
          .timeLimit(.minutes(2)))
    func apiLatency() async throws {
        let run = try await BenchChild.run(["api-latency", "--store", "memory,sqlite", "--devices", "8", "--warmup", "2"])
        #expect(run.status == 0, "\(run.errors)")
        for store in ["memory", "sqlite"] {
            let rows = Self.lines(run.errors, startingWith: store + " ")
            // store, call (two words for the token), calls, p50, p90, p99: six devices counted, percentiles in order.
            #expect(rows.count == 4, "\(run.errors)")
            for row in rows {
                let cells = row.split(separator: " ", omittingEmptySubsequences: true)
                let figures = cells.suffix(4)
                #expect(figures.first == "6", "\(row)")
                let percentiles = figures.dropFirst().compactMap { Double($0) }
                #expect(percentiles.count == 3 && percentiles.allSatisfy { $0 > 0 } && percentiles == percentiles.sorted(), "\(row)")
            }
            #expect(rows.map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().dropLast(4).joined(separator: " ") }
                    == ["register", "push-to-start token", "follow", "unfollow"])
        }
    }

    @Test("polls on PostgreSQL: the WAL the server wrote over the window (the leases' renewals, nothing changing)",
          .enabled(if: Self.postgresServer != nil, "MATCHCAST_POSTGRES_URL is not set: no PostgreSQL to run on"),
          .timeLimit(.minutes(2)))
    func pollsPostgresWAL() async throws {
        let server = try #require(Self.postgresServer)
        let run = try await BenchChild.run([
            "polls", "--store", "postgres", "--matches", "4", "--poll-ms", "200", "--seconds", "3", "--warmup", "0",
            "--probe-seconds", "0",
        ], postgres: server)
        #expect(run.status == 0, "\(run.errors)")
        // The table's row, not the line naming the server's settings.
        let row = try #require(
            Self.lines(run.errors, startingWith: "postgres ").first { !$0.hasPrefix("postgres server") }, "\(run.errors)")
        let cells = row.split(separator: " ", omittingEmptySubsequences: true)
        #expect(cells.count == 17, "\(row)")
        // Each of the four leases renewed every second of the window: some WAL, whatever else the server wrote.
        #expect((Double(cells[15]) ?? 0) > 0, "\(row)")
    }

    @Test("serve with the APNs sink, into the independent fake: every device gets its start and its goal once",
          .timeLimit(.minutes(2)))
    func serveAPNs() async throws {
        let run = try await BenchChild.run([
            "serve", "--store", "memory", "--devices", "10", "--goals", "1", "--quiet-seconds", "1", "--poll-ms", "100",
            "--sink", "apns",
        ])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("(expected 10, 10, 0, 0): exact"), "\(run.errors)")
    }

    @Test("soak for a few seconds: samples, the CSV and the plot written, every activity ended once",
          .timeLimit(.minutes(2)))
    func soakShort() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-bench-soak-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let recording = folder.appendingPathComponent("match.ndjson").path
        try SoakTests.recording().write(to: URL(fileURLWithPath: recording))
        let run = try await BenchChild.run([
            "soak", "--store", "memory", "--recording", recording, "--followers", "5", "--minutes", "0.05",
            "--sample-seconds", "1", "--step-seconds", "0.5", "--warmup-minutes", "0", "--poll-ms", "100",
            "--out", folder.appendingPathComponent("out").path,
        ])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("memory: 5 followers"), "\(run.errors)")
        let csv = try String(contentsOf: folder.appendingPathComponent("out/soak-memory.csv"), encoding: .utf8)
        #expect(csv.split(separator: "\n").count >= 2, "a header and at least one sample")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("out/soak-memory.svg").path))
    }

    @Test("webpush-crypto: a row per step, each a rate and a time per message", .timeLimit(.minutes(2)))
    func webPushCrypto() async throws {
        let run = try await BenchChild.run(["webpush-crypto", "--messages", "50", "--subscriptions", "5"])
        #expect(run.status == 0, "\(run.errors)")
        for step in ["surface → JSON body", "encrypt (RFC 8291)", "VAPID token (ES256)", "whole message"] {
            let row = try #require(Self.lines(run.errors, startingWith: step).first, "\(run.errors)")
            let figures = row.dropFirst(step.count).split(separator: " ").compactMap { Double($0) }
            #expect(figures.count == 2 && figures.allSatisfy { $0 > 0 }, "\(row)")
        }
    }

    @Test("fanout to Android and web devices through the FCM and Web Push sinks: each device gets each push exactly once",
          .timeLimit(.minutes(3)))
    func fanoutFCMAndWebPush() async throws {
        let fcm = try await BenchChild.run(["fanout", "--activities", "40", "--updates", "2", "--sink", "fcm", "--store", "memory,sqlite"])
        #expect(fcm.status == 0, "\(fcm.errors)")
        // Per store: 40 starts and 2 × 40 updates, to 40 tokens.
        #expect(Self.lines(fcm.errors, startingWith: "fake FCM: 120 messages to 40 tokens, 0 refused, 0 tokens without").count == 2,
                "\(fcm.errors)")
        // A row per store and update, in each store's table and again side by side.
        #expect(Self.lines(fcm.errors, startingWith: "fcm ").count == 8)
        let webPush = try await BenchChild.run(["fanout", "--activities", "20", "--updates", "1", "--sink", "webpush"])
        #expect(webPush.status == 0, "\(webPush.errors)")
        #expect(webPush.errors.contains("fake push service: 40 pushes decrypted for 20 browsers, 0 refused, 0 browsers without"),
                "\(webPush.errors)")
    }

    @Test("a bad option is refused before anything runs, naming the option")
    func badOptionsRefused() async throws {
        for (arguments, option) in [
            (["fanout", "--activities", "0"], "--activities"),
            (["fanout", "--batch", "5", "--sink", "apns"], "--batch"),
            (["fanout", "--batch", "5", "--sink", "fcm"], "--batch"),
            (["fanout", "--sink", "webpush", "--activities", "300000"], "--activities"),
            (["polls", "--poll-ms", "5"], "--poll-ms"),
            (["serve", "--apns-connections", "2"], "--apns-connections"),
            (["soak", "--recording", "x", "--minutes", "0"], "--minutes"),
            (["webpush-crypto", "--messages", "0"], "--messages"),
            (["api-latency", "--devices", "0"], "--devices"),
            (["api-latency", "--devices", "5", "--warmup", "5"], "--warmup"),
            (["fanout", "--apps", "2", "--sink", "fcm"], "--apps"),
            (["fanout", "--apps", "17"], "--apps"),
        ] {
            let run = try await BenchChild.run(arguments)
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.errors)")
            #expect(run.errors.contains(option), "\(arguments): \(run.errors)")
        }
    }
}
