#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MatchcastDelivery
import MatchcastTesting
import Synchronization

/// The APNs mode's own figures, one line per timed update: notifications per second, latency from
/// the update to each notification reaching the fake, connections, CPU per notification
/// (`getrusage`, the whole process: sender, fake and lifecycle manager alike), answers and
/// duplicates.
final class APNsBenchReport: Sendable {
    private struct Mark {
        var cpu: Duration
        var accepted: Int
        var statuses: [Int: Int]
    }

    let server: FakeAPNsServer
    let sink: APNsSink
    private let mark = Mutex<Mark?>(nil)
    private let lines = Mutex<[String]>([])
    let invalidReports: InvalidCounter

    init(server: FakeAPNsServer, sink: APNsSink, invalidReports: InvalidCounter) {
        self.server = server
        self.sink = sink
        self.invalidReports = invalidReports
    }

    /// Before the timed updates: notes CPU and counts, starts noting arrival times.
    func begin() {
        server.recordArrivals()
        mark.withLock { $0 = Mark(cpu: Self.rusageCPU(), accepted: server.acceptedCount, statuses: server.statusCounts) }
    }

    /// After update `update`, which was ingested at `started`.
    func updateDone(_ update: Int, started: ContinuousClock.Instant) {
        let cpu = Self.rusageCPU()
        let arrivals = server.takeArrivals().map { (started.duration(to: $0)) }.sorted()
        let statuses = server.statusCounts
        let accepted = server.acceptedCount
        let previous = mark.withLock { mark -> Mark? in
            defer { mark = Mark(cpu: cpu, accepted: accepted, statuses: statuses) }
            return mark
        }
        server.recordArrivals()
        guard let previous else { return }
        let answered = arrivals.count
        let last = arrivals.last ?? .zero
        let status = sink.connectionStatus
        var mix: [String] = []
        for code in statuses.keys.sorted() {
            let count = statuses[code]! - (previous.statuses[code] ?? 0)
            if count > 0 { mix.append("\(code)×\(count)") }
        }
        let line = String(
            format: "apns update #%d: %d requests answered, the last %.0f ms after ingest (%.0f/s); update→APNs latency p50 %.1f ms, p99 %.1f ms; "
                + "CPU %.1f µs per request (getrusage, whole process); connections %d (peak open %d, opened %d, resent %d); answers %@; duplicates %d",
            update, answered, last.milliseconds, Double(answered) / max(last.seconds, 1e-9),
            Self.percentile(arrivals, 0.50).milliseconds, Self.percentile(arrivals, 0.99).milliseconds,
            (cpu - previous.cpu).seconds * 1e6 / Double(max(answered, 1)),
            server.connectionsAccepted, status.peakOpen, status.opened, status.resent, mix.joined(separator: " ") as NSString,
            server.duplicates)
        lines.withLock { $0.append(line) }
    }

    /// The lines so far, and a closing one.
    func print() {
        for line in lines.withLock({ $0 }) { StandardStreams.err(line) }
        StandardStreams.err(
            "fake APNs: \(server.requestCount) requests on \(server.connectionsAccepted) connections, "
                + "\(server.acceptedCount) accepted, \(server.providerTokenVerifications) provider-token checks, "
                + "peak \(server.peakConcurrentStreams) streams on one connection; duplicates (a request for an apns-id "
                + "that already had a final answer): \(server.duplicates); dead tokens reported: \(invalidReports.value)")
    }

    private static func percentile(_ sorted: [Duration], _ fraction: Double) -> Duration {
        guard !sorted.isEmpty else { return .zero }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1 < 0 ? 0 : Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    /// User plus system CPU of this process so far (`getrusage(RUSAGE_SELF)`).
    static func rusageCPU() -> Duration {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return .seconds(Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec))
            + .microseconds(Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec))
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
