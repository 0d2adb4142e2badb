import Foundation
@testable import MatchcastBench
import MatchcastCLI
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Synchronization
import Testing

@Suite("matchcast-bench soak: the looping timeline, the report, and a short soak through serve")
struct SoakTests {
    /// A recording of one football match as `matchcast record` writes it: a scheduled answer, three in-play
    /// answers (one polled twice, unchanged), the final; and a live-list line that is not a match answer.
    static func recording() throws -> Data {
        var match = BenchMatch(id: "ars-che")
        let start = Date(timeIntervalSince1970: 1_776_780_000)
        var snapshots = [match.scheduled(at: start, startsAt: start.addingTimeInterval(600))]
        let kickOff = match.kickOff(at: start.addingTimeInterval(600))
        snapshots += [kickOff, kickOff, match.goal(at: start.addingTimeInterval(1200)), match.goal(at: start.addingTimeInterval(1800))]
        var final = match.goal(at: start.addingTimeInterval(3000))
        final.status = .completed
        snapshots.append(final)
        var lines = [try RecordingLine(t: 0, request: "/live-matches", status: 200, body: Data(#"{"matches":[]}"#.utf8)).encoded()]
        for (index, snapshot) in snapshots.enumerated() {
            let body = try JSON.encoder().encode(NativeFeedBody.Match(retryAfterMs: 1000, match: snapshot))
            lines.append(try RecordingLine(t: Double(index), request: "/matches/ars-che", status: 200, body: body).encoded())
        }
        return lines.reduce(into: Data()) { all, line in
            all.append(line)
            if line.last != UInt8(ascii: "\n") { all.append(UInt8(ascii: "\n")) }
        }
    }

    @Test("the in-play states loop under the soak's id with seq growing; the final is the recording's")
    func timelineLoops() throws {
        let timeline = try SoakTimeline(recording: Self.recording(), matchId: "soak-1")
        #expect(timeline.states.count == 3, "kick-off (once: the repeat is the same state), two goals")
        let now = Date()
        let scheduled = timeline.scheduled(at: now)
        #expect(scheduled.status == .scheduled && scheduled.seq == 1 && scheduled.id == "soak-1")
        #expect(try #require(scheduled.startsAt) > now)
        let shown = (0..<7).map { timeline.state($0, at: now) }
        #expect(shown.map(\.seq) == Array(2...8))
        #expect(shown.allSatisfy { $0.id == "soak-1" && $0.status == .live })
        // The fourth state shown is the first again: a loop.
        #expect(shown[3].score == shown[0].score && shown[4].score == shown[1].score)
        #expect(shown[0].score != shown[1].score)
        let final = timeline.finalState(after: 7, at: now)
        #expect(final.status == .completed && final.seq == 9 && final.id == "soak-1")
        #expect(final.score == .teamTotals(TeamScore(home: 2, away: 1, period: "1H", clock: "34'")))
    }

    @Test("a recording without an in-play match answer, or not a recording at all, is refused with a reason")
    func timelineRefusesWhatItCannotPlay() throws {
        let scheduledOnly = try RecordingLine(
            t: 0, request: "/matches/x", status: 200,
            body: try JSON.encoder().encode(NativeFeedBody.Match(
                retryAfterMs: 1000, match: { var m = BenchMatch(id: "x"); return m.scheduled(at: Date(), startsAt: Date()) }())))
            .encoded()
        #expect(throws: CommandFailure.self) { try SoakTimeline(recording: scheduledOnly, matchId: "soak-1") }
        #expect(throws: CommandFailure.self) { try SoakTimeline(recording: Data("not a recording\n".utf8), matchId: "soak-1") }
    }

    @Test("the report: CSV rows per sample, memory growth after the warm-up, a plot with both panels")
    func report() {
        let mb = 1_048_576
        let samples = [
            SoakSample(elapsed: 60, rss: 100 * mb, openFiles: 30, cpuPercent: 12.5, outboxDepth: 0, changes: 4, deliveries: 400,
                       latencyP50: .milliseconds(520), latencyP99: .milliseconds(980), latencyMax: .milliseconds(1010)),
            SoakSample(elapsed: 120, rss: 200 * mb, openFiles: 31, cpuPercent: nil, outboxDepth: nil, changes: 4, deliveries: 0,
                       latencyP50: nil, latencyP99: nil, latencyMax: nil),
            SoakSample(elapsed: 180, rss: 210 * mb, openFiles: 31, cpuPercent: 10, outboxDepth: 3, changes: 4, deliveries: 400,
                       latencyP50: .milliseconds(500), latencyP99: .milliseconds(900), latencyMax: .milliseconds(950)),
        ]
        let csv = SoakReport.csv(samples).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(csv[0] == Substring(SoakReport.csvHeader))
        #expect(csv[1] == "60,100.0,30,12.5,0,4,400,520.0,980.0,1010.0")
        #expect(csv[2] == "120,200.0,31,,,4,0,,,")
        #expect(csv.count == 5 && csv[4].isEmpty)
        // The warm-up leaves the first minute's climb out: 200 → 210 MB is 5 %.
        let growth = SoakReport.rssGrowth(samples, after: 120)
        #expect(growth?.from.elapsed == 120 && growth?.to.elapsed == 180)
        #expect(abs((growth?.growth ?? 0) - 0.05) < 1e-9)
        #expect(SoakReport.rssGrowth(samples, after: 150) == nil, "one sample is no growth")
        #expect(SoakReport.niceCeiling(0.7) == 1 && SoakReport.niceCeiling(180) == 200 && SoakReport.niceCeiling(210) == 500)
        let svg = SoakReport.svg(samples, title: "a <test>")
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.components(separatedBy: "<polyline").count == 4, "RSS, p50 and p99")
        #expect(svg.contains("a &lt;test&gt;"))
    }

    @Test("a short soak through serve on SQLite: samples taken, every change delivered, every activity ends once",
          .timeLimit(.minutes(2)))
    func soakEndToEnd() async throws {
        let binary = try #require(BuiltExecutable.named("matchcast"), "matchcast is built beside the tests")
        let sampled = Mutex<[SoakSample]>([])
        let benchmark = SoakBenchmark(options: SoakBenchmark.Options(
            followers: 20, duration: .seconds(3), sampleEvery: .seconds(1), stepEvery: .milliseconds(400), pollMs: 50,
            clients: 4, executable: binary.path, store: .sqlite, serveLogLevel: "info", timeline: try SoakTimeline(recording: Self.recording(), matchId: SoakBenchmark.matchId),
            phaseTimeout: .seconds(30), verbose: false, onSample: { sample in sampled.withLock { $0.append(sample) } }))
        let result = try await benchmark.run()
        // A sample a second for 3 s, a change every 0.4 s: on a loaded machine the loop runs late, so fewer of
        // each, never more.
        #expect((1...3).contains(result.samples.count), "\(result.samples.count) samples")
        #expect(result.samples == sampled.withLock { $0 })
        #expect(result.samples.allSatisfy { $0.rss > 0 && $0.openFiles > 0 })
        #expect((1...8).contains(result.changes), "\(result.changes) changes in 3 s at one per 0.4 s")
        #expect((result.samples.first?.deliveries ?? 0) >= 20, "the first sample reads the starts")
        // The first change is a goal (a key event: sent at once); later ones may be routine updates, which serve
        // holds back to one per activity every activities.coalesceSeconds.
        #expect(result.updates >= 20, "\(result.updates) updates for \(result.changes) changes; serve logged:\n\(result.serveLogTail)")
        #expect(result.samples.contains { $0.latencyP99 != nil })
        #expect(result.starts == 20 && result.ends == 20 && result.duplicates == 0 && result.strays == 0)
        #expect(result.everyActivityEnded)
        #expect(result.serveExit.contains("SIGTERM (status 0)"))
    }
}
