import Foundation
import MatchcastCLI
import MatchcastDelivery
import MatchcastTesting
import Synchronization

/// The APNs mode's own figures, one line per timed update: notifications per second, latency from
/// the update to each notification reaching the fake, connections, CPU per notification
/// (`getrusage`: this process, i.e. lifecycle manager and sender, plus the fake's own process when
/// it runs in one; with the fake in this process the first figure includes it), answers and
/// duplicates.
final class APNsBenchReport: Sendable {
    private struct Mark {
        var cpu: Duration
        var fakeCPU: Int64?
        var figures: FakeAPNsFigures
    }

    let server: any FakeAPNsProbe
    let sink: APNsSink
    /// Whether the fake runs in a process of its own.
    let separate: Bool
    private let mark = Mutex<Mark?>(nil)
    private let lines = Mutex<[String]>([])
    private let final = Mutex<FakeAPNsFigures?>(nil)
    let invalidReports: InvalidCounter

    init(server: any FakeAPNsProbe, sink: APNsSink, invalidReports: InvalidCounter, separate: Bool) {
        self.server = server
        self.sink = sink
        self.invalidReports = invalidReports
        self.separate = separate
    }

    /// Before the timed updates: notes CPU and counts, starts noting arrival times.
    func begin() {
        server.recordArrivals()
        let figures = server.figures()
        mark.withLock { $0 = Mark(cpu: Duration.microseconds(processCPUMicroseconds()), fakeCPU: figures.cpuMicroseconds, figures: figures) }
    }

    /// After update `update`, which was ingested at `started`.
    func updateDone(_ update: Int, started: ContinuousClock.Instant) {
        let cpu = Duration.microseconds(processCPUMicroseconds())
        let start = MonotonicTime.of(started)
        let figures = server.take()
        server.recordArrivals()
        let arrivals = figures.arrivals.map { Duration.nanoseconds($0 - start) }.sorted()
        let previous = mark.withLock { mark -> Mark? in
            defer { mark = Mark(cpu: cpu, fakeCPU: figures.cpuMicroseconds, figures: figures) }
            return mark
        }
        guard let previous else { return }
        let answered = arrivals.count
        let last = arrivals.last ?? .zero
        let status = sink.connectionStatus
        var mix: [String] = []
        for code in figures.statusCounts.keys.sorted() {
            let count = figures.statusCounts[code]! - (previous.figures.statusCounts[code] ?? 0)
            if count > 0 { mix.append("\(code)×\(count)") }
        }
        let perRequest = (cpu - previous.cpu).seconds * 1e6 / Double(max(answered, 1))
        let cpuText: String
        if let now = figures.cpuMicroseconds, let before = previous.fakeCPU {
            cpuText = String(
                format: "CPU per request %.1f µs in the broker process + %.1f µs in the fake's (getrusage)",
                perRequest, Double(now - before) / Double(max(answered, 1)))
        } else {
            cpuText = String(format: "CPU %.1f µs per request (getrusage, whole process, fake included)", perRequest)
        }
        let line = String(
            format: "apns update #%d: %d requests answered, the last %.0f ms after ingest (%.0f/s); update→APNs latency p50 %.1f ms, p99 %.1f ms; "
                + "%@; connections %d (peak open %d, opened %d, resent %d; at most %d requests in flight on one); answers %@; duplicates %d",
            update, answered, last.milliseconds, Double(answered) / max(last.seconds, 1e-9),
            Self.percentile(arrivals, 0.50).milliseconds, Self.percentile(arrivals, 0.99).milliseconds,
            cpuText as NSString, figures.connections, status.peakOpen, status.opened, status.resent, status.peakInFlight,
            mix.joined(separator: " ") as NSString, figures.duplicates)
        lines.withLock { $0.append(line) }
    }

    /// The fake's closing counts, read now (before the fake stops); what `print` shows.
    func close() -> FakeAPNsFigures {
        let figures = server.figures()
        final.withLock { $0 = figures }
        return figures
    }

    /// The lines so far, and a closing one.
    func print() {
        for line in lines.withLock({ $0 }) { StandardStreams.err(line) }
        let figures = final.withLock { $0 } ?? server.figures()
        StandardStreams.err(
            "fake APNs (\(separate ? "a process of its own" : "in this process")): \(figures.requests) requests on "
                + "\(figures.connections) connections, \(figures.accepted) accepted, \(figures.verifications) provider-token checks, "
                + "peak \(figures.peakStreams) streams open on one connection; duplicates (a request for an apns-id "
                + "that already had a final answer): \(figures.duplicates); dead tokens reported: \(invalidReports.value)")
    }

    private static func percentile(_ sorted: [Duration], _ fraction: Double) -> Duration {
        sorted.isEmpty ? .zero : LatencySample.nearestRank(sorted, fraction)
    }
}

extension Duration {
    fileprivate var milliseconds: Double { seconds * 1000 }
}

/// Counts the sink's dead-token reports (the benchmark does not end activities for them).
final class InvalidCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
