import ArgumentParser
@testable import MatchcastBench
import Testing

@Suite("matchcast-bench polls: several match counts, and what a poll and a match cost between them")
struct PollsMarginalTests {
    @Test("--matches takes a comma list, sorted; a count out of range, a word or a repeat is refused, saying why")
    func matchCounts() throws {
        #expect(try MatchCounts.parse("1000,10000").values == [1_000, 10_000])
        #expect(try MatchCounts.parse("10_000, 1000,2000").values == [1_000, 2_000, 10_000])
        for bad in ["0", "100001", "ten", "", "1000,", "1000,1000", "-5"] {
            #expect(throws: BenchSetupError.self, "\(bad)") { try MatchCounts.parse(bad) }
        }
        #expect(try PollsBenchCommand.parse([]).matches.values == [2_000])
        #expect(try PollsBenchCommand.parse(["--matches", "1000,10000"]).matches.values == [1_000, 10_000])
        // On the command line, the message says what is wrong, for --matches and for --store.
        for (arguments, says) in [
            (["--matches", "0"], "'0' is not a number of matches (1...100000)"),
            (["--matches", "1000,1000"], "1000 matches named twice"),
            (["--store", "sqlite,mysql"], "store 'mysql' is not one of memory, sqlite, postgres"),
        ] {
            let error = #expect(throws: (any Error).self) { try PollsBenchCommand.parse(arguments) }
            let message = error.map { PollsBenchCommand.message(for: $0) } ?? ""
            #expect(message.contains(says), "\(arguments): \(message)")
        }
    }

    @Test("the probes get a window of their own after the polls': 20 s by default, none with 0, a bad length refused")
    func probeWindow() throws {
        #expect(try PollsBenchCommand.parse([]).probeSeconds == 20)
        #expect(try PollsBenchCommand.parse(["--probe-seconds", "0"]).probeSeconds == 0)
        for bad in ["-1", "3601"] {
            let error = #expect(throws: (any Error).self) { try PollsBenchCommand.parse(["--probe-seconds=\(bad)"]) }
            let message = error.map { PollsBenchCommand.message(for: $0) } ?? ""
            #expect(message.contains("--probe-seconds must be 0...3600"), "\(bad): \(message)")
        }
    }

    /// A run of `matches` over a 10 s window: `polls` answered, `cpu` seconds of serve's CPU, `grown` bytes of RSS.
    private func run(_ store: BenchStoreKind, _ matches: Int, polls: Int, cpu: Double?, grown: Int) -> PollsBenchmark.Result {
        var result = PollsBenchmark.Result(store: store, matches: matches, window: .seconds(10), setup: .zero)
        result.polls = polls
        result.serveCPU = cpu.map { .seconds($0) }
        result.rssBefore = 40_000_000
        result.rssAfter = 40_000_000 + grown
        return result
    }

    @Test("the cost of an added poll and match leaves out what serve spends whatever the count")
    func marginal() throws {
        // 100 matches: 100 polls/s, 15 % of a core; 1,000: 1,000 polls/s, 60 %. Each added poll 500 µs; 100 ms a second
        // besides the polls. 3 MB grown at 100 matches, 12 MB at 1,000: 10,000 bytes per added match.
        let results = [
            run(.sqlite, 100, polls: 1_000, cpu: 1.5, grown: 3_000_000),
            run(.sqlite, 1_000, polls: 10_000, cpu: 6.0, grown: 12_000_000),
            run(.memory, 100, polls: 1_000, cpu: 1.0, grown: 2_000_000),
            run(.memory, 500, polls: 5_000, cpu: 1.0, grown: 2_000_000),  // nothing more spent: a poll costs nothing more
            run(.memory, 1_000, polls: 10_000, cpu: 4.6, grown: 20_000_000),
            run(.postgres, 1_000, polls: 10_000, cpu: 6.0, grown: 12_000_000),  // one count: no line
        ]
        let marginals = PollsMarginal.of(results)
        #expect(marginals.map(\.store) == [.sqlite, .memory])
        let sqlite = try #require(marginals.first)
        #expect((sqlite.fewer, sqlite.more) == (100, 1_000))
        #expect(abs(sqlite.cpuPerPoll.seconds - 500e-6) < 1e-9)
        #expect(abs(sqlite.cpuPerSecondBesides.seconds - 0.1) < 1e-9)
        #expect(sqlite.rssPerMatch == 10_000)
        #expect(sqlite.line == "sqlite, 100 → 1000 matches: 500.0 µs per added poll, 100.0 ms a second besides the polls, 9.8 KB per added match")
        // The fewest and the most only: 100 → 1,000 (the 500 run in between is not used).
        let memory = try #require(marginals.last)
        #expect((memory.fewer, memory.more) == (100, 1_000))
        #expect(abs(memory.cpuPerPoll.seconds - 400e-6) < 1e-9)
        #expect(abs(memory.cpuPerSecondBesides.seconds - 0.06) < 1e-9)
        #expect(memory.rssPerMatch == 20_000)
    }

    @Test("runs that did not poll more with more matches, or had no CPU reading, give no figure")
    func noFigure() {
        let behind = [
            run(.sqlite, 100, polls: 1_000, cpu: 1.5, grown: 3_000_000),
            run(.sqlite, 1_000, polls: 900, cpu: 6.0, grown: 12_000_000),
        ]
        #expect(PollsMarginal.of(behind).isEmpty)
        let unread = [
            run(.sqlite, 100, polls: 1_000, cpu: nil, grown: 3_000_000),
            run(.sqlite, 1_000, polls: 10_000, cpu: 6.0, grown: 12_000_000),
        ]
        #expect(PollsMarginal.of(unread).isEmpty)
    }
}
