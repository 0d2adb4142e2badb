import Foundation
@testable import MatchcastBench
import MatchcastCore
import MatchcastTesting
import Testing

@Suite("matchcast-bench: store lists, the PostgreSQL server, the NDJSON tap")
struct BenchCommandTests {
    @Test("a comma list names the stores in order; all is every store; blanks and case are forgiven")
    func storeLists() throws {
        #expect(try BenchStoreList.parse("memory,sqlite,postgres").kinds == [.memory, .sqlite, .postgres])
        #expect(try BenchStoreList.parse("postgres, SQLite").kinds == [.postgres, .sqlite])
        #expect(try BenchStoreList.parse("all").kinds == [.memory, .sqlite, .postgres])
        #expect(try BenchStoreList.parse("sqlite").kinds == [.sqlite])
        #expect(throws: BenchSetupError.self) { try BenchStoreList.parse("sqlite,sqlite") }
        #expect(throws: BenchSetupError.self) { try BenchStoreList.parse("mysql") }
        #expect(throws: BenchSetupError.self) { try BenchStoreList.parse("") }
        #expect(throws: BenchSetupError.self) { try BenchStoreList.parse("memory,,sqlite") }
        #expect(throws: BenchSetupError.self) { try BenchStoreList.parse("all,memory") }
    }

    @Test("fanout's restore ids: all in one virtual millisecond by default (random against the stored order); in creation order with --ids-in-creation-order")
    func restoreIdOrder() throws {
        let made = Date(timeIntervalSince1970: 1_767_225_600)
        var rng = SeededGenerator(seed: 1)
        let ordered = FanoutBenchmark.activityIds(count: 1_000, madeAt: made, inCreationOrder: true, using: &rng)
        #expect(ordered == ordered.sorted(), "id order is the order they are stored in")
        #expect(Set(ordered).count == 1_000)
        rng = SeededGenerator(seed: 1)
        let random = FanoutBenchmark.activityIds(count: 1_000, madeAt: made, inCreationOrder: false, using: &rng)
        #expect(random != random.sorted(), "one millisecond: the random part orders them")
        #expect(Set(random.map { $0.prefix(14) }).count == 1, "one time part (act_ and 10 characters) for all")
        #expect(Set(ordered.map { $0.prefix(14) }).count == 1_000, "a millisecond each")
        #expect(try FanoutBenchCommand.parse(["--ids-in-creation-order"]).idsInCreationOrder)
        #expect(try !FanoutBenchCommand.parse([]).idsInCreationOrder)
    }

    @Test("--store on both commands: defaults, lists, and a bad name refused while parsing")
    func storeOptions() throws {
        #expect(try FanoutBenchCommand.parse([]).store.kinds == [.memory])
        #expect(try FanoutBenchCommand.parse(["--store", "sqlite,postgres"]).store.kinds == [.sqlite, .postgres])
        #expect(try ServeBenchCommand.parse([]).child.store.kinds == [.sqlite])
        #expect(try ServeBenchCommand.parse(["--store", "all"]).child.store.kinds == [.memory, .sqlite, .postgres])
        let serve = try ServeBenchCommand.parse(["--devices", "20", "--goals", "1", "--postgres-url", "postgres://u@h/db"])
        #expect(serve.devices == 20 && serve.goals == 1 && serve.child.postgresURL == "postgres://u@h/db")
        #expect(throws: (any Error).self) { try FanoutBenchCommand.parse(["--store", "mysql"]) }
        #expect(throws: (any Error).self) { try ServeBenchCommand.parse(["--store", "sqlite,bogus"]) }
        #expect(throws: (any Error).self) { try ServeBenchCommand.parse(["--devices", "0"]) }
        #expect(throws: (any Error).self) { try ServeBenchCommand.parse(["--poll-ms", "1"]) }
    }

    @Test("postgres needs a server: the option, else MATCHCAST_POSTGRES_URL, else a clear error")
    func postgresServer() throws {
        let withPostgres = BenchStoreList([.memory, .postgres])
        let error = #expect(throws: BenchSetupError.self) {
            try withPostgres.postgresServer(option: nil, environment: [:])
        }
        #expect(error?.description.contains("--postgres-url") == true)
        #expect(error?.description.contains("MATCHCAST_POSTGRES_URL") == true)
        #expect(throws: BenchSetupError.self) {
            try withPostgres.postgresServer(option: nil, environment: ["MATCHCAST_POSTGRES_URL": ""])
        }
        #expect(try withPostgres.postgresServer(option: nil, environment: ["MATCHCAST_POSTGRES_URL": "postgres://a@h/x"])
            == "postgres://a@h/x")
        #expect(try withPostgres.postgresServer(
            option: "postgres://b@h/y", environment: ["MATCHCAST_POSTGRES_URL": "postgres://a@h/x"]) == "postgres://b@h/y")
        #expect(throws: BenchSetupError.self) { try withPostgres.postgresServer(option: "sqlite:/tmp/x", environment: [:]) }
        #expect(throws: BenchSetupError.self) { try withPostgres.postgresServer(option: "postgres://nohost", environment: [:]) }
        // Without postgres in the list nothing is needed.
        #expect(try BenchStoreList([.memory, .sqlite]).postgresServer(option: nil, environment: [:]) == nil)
    }

    @Test("without a server, --store postgres exits 2 before doing anything", .timeLimit(.minutes(1)))
    func postgresMissingExitsTwo() async throws {
        for arguments in [["fanout", "--store", "memory,postgres"], ["serve", "--store", "postgres"]] {
            let run = try await BenchChild.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.errors)")
            #expect(run.errors.contains("MATCHCAST_POSTGRES_URL"))
        }
    }

    @Test("the tap reads event, device and activity id from a delivery line, and skips what is not one")
    func tapParsesLines() {
        let start = #"{"id":"dlv_1","matchId":"m","activityId":"act_01ABC","target":{"kind":"pushToStartToken","value":"0000002aa1a1a1a1"},"apns":{"push-type":"liveactivity","priority":10},"payload":{"aps":{"content-state":{"event":"GOAL! update end"},"event":"start","stale-date":1,"timestamp":2}}}"#
        let update = #"{"id":"dlv_2","matchId":"m","activityId":"act_01ABC","target":{"kind":"updateToken","value":"00000007b2b2"},"apns":{},"payload":{"aps":{"content-state":{"event":"Kick-off"},"event":"update","timestamp":2}}}"#
        let end = #"{"id":"dlv_3","matchId":"m","activityId":"act_9","target":{"kind":"updateToken","value":"not-hex-token"},"apns":{},"payload":{"aps":{"event":"end","timestamp":2}}}"#
        func parse(_ text: String) -> DeliveryTap.Line? {
            Array(text.utf8).withUnsafeBytes { DeliveryTap.parse($0, time: 7) }
        }
        let started = parse(start)
        #expect(started?.event == .start && started?.device == 42 && started?.activityId == "act_01ABC" && started?.time == 7)
        #expect(started?.priority == 10)
        let updated = parse(update)
        #expect(updated?.event == .update && updated?.device == 7 && updated?.activityId == nil && updated?.priority == 0)
        let ended = parse(end)
        #expect(ended?.event == .end && ended?.device == -1)
        #expect(parse("2026-01-01 a log line that is no delivery at all, long enough") == nil)
        #expect(parse("{}") == nil)
    }

    @Test("bench serve, 20 devices and 1 goal on SQLite: every device gets its start and its update exactly once",
          .timeLimit(.minutes(1)))
    func serveEndToEnd() async throws {
        let binary = try #require(BuiltExecutable.named("matchcast"), "matchcast is built beside the tests")
        let benchmark = ServeBenchmark(options: ServeBenchmark.Options(
            devices: 20, goals: 1, clients: 4, pollMs: 50, executable: binary.path, store: .sqlite,
            phaseTimeout: .seconds(30), quiet: .milliseconds(300), settle: .milliseconds(300), verbose: false))
        let result = try await benchmark.run()
        #expect(result.quietWindow >= .milliseconds(300))
        #expect(result.quietCPU != nil)
        #expect(result.starts == 20)
        #expect(result.updates == 20)  // priority 10: the goal
        #expect(result.routineUpdates == 0)  // a second-long run refreshes no stale-date
        #expect(result.ends == 0 && result.strays == 0)
        #expect(result.kickOff.deliveries == 20 && result.kickOff.duplicates == 0)
        #expect(result.goals.count == 1)
        #expect(result.goals.first?.deliveries == 20 && result.goals.first?.duplicates == 0)
        #expect(result.isExact)
        #expect(result.phases.map(\.count) == [20, 20, 20])
        #expect(result.serveExit.contains("SIGTERM (status 0)"))
        if let goal = result.goals.first {
            #expect(goal.changeToFirst >= .zero && goal.changeToLast >= goal.changeToFirst)
        }
    }

    @Test("bench polls, 10 matches on SQLite: each is polled at its interval, unchanged answers deliver nothing",
          .timeLimit(.minutes(1)))
    func pollsEndToEnd() async throws {
        let binary = try #require(BuiltExecutable.named("matchcast"), "matchcast is built beside the tests")
        let benchmark = PollsBenchmark(options: PollsBenchmark.Options(
            matches: 10, pollMs: 200, seconds: 3, warmup: 0, clients: 4, probesPerSecond: 5, probeSeconds: 2,
            executable: binary.path, store: .sqlite, phaseTimeout: .seconds(30), verbose: false))
        let result = try await benchmark.run()
        // 10 matches every 200 ms for 3 s: about 150 polls. Every match polled again at least once, even on a loaded
        // machine; never more often than its interval allows.
        #expect(result.polls >= 10 && result.polls <= 170, "\(result.polls) polls")
        #expect(result.window >= .seconds(3) && result.window < .seconds(10), "\(result.window)")
        #expect(result.notModified >= result.polls - 10)  // after each match's first answer, every poll is a 304
        #expect(result.deliveries == 0)
        // The probes run in a window of their own, after the polls' (2 s: about 100 polls go on meanwhile). They are
        // paced at 5 a second, but each waits for its follow and unfollow: a loaded machine runs fewer.
        #expect(result.follow.count >= 1 && result.follow.count == result.unfollow.count, "\(result.follow.count) probes")
        #expect(result.follow.count <= 11, "\(result.follow.count) probes in 2 s at 5 a second")
        #expect(result.probePolls >= 10, "\(result.probePolls) polls in the probe window")
        #expect(result.serveCPU != nil && result.probeCPU != nil && result.rssAfter > 0)
        #expect(result.anonymousAfter > 0 && result.anonymousAfter <= result.rssAfter)
        #expect(result.serveExit.contains("SIGTERM (status 0)"))
    }

    @Test("latency percentiles are nearest-rank")
    func percentiles() {
        var sample = LatencySample()
        #expect(sample.percentile(99) == nil)
        for ms in (1...100).reversed() { sample.add(.milliseconds(ms)) }
        #expect(sample.percentile(50) == .milliseconds(50))
        #expect(sample.percentile(99) == .milliseconds(99))
        #expect(sample.percentile(100) == .milliseconds(100))
        #expect(sample.percentile(0) == .milliseconds(1))
    }

    @Test("an update's start is printed as UTC wall-clock time to the millisecond, rounded down")
    func clockTime() {
        let midnight = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        #expect(BenchTable.clockTime(midnight) == "00:00:00.000")
        #expect(BenchTable.clockTime(midnight.addingTimeInterval(3_723.0459)) == "01:02:03.045")
        #expect(BenchTable.clockTime(midnight.addingTimeInterval(86_399.9999)) == "23:59:59.999")
        #expect(BenchTable.clockTime(midnight.addingTimeInterval(86_400 + 61.5)) == "00:01:01.500")
    }
}
