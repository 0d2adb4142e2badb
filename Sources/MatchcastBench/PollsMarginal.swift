import ArgumentParser
import Foundation

/// `--matches 1000,10000`: the match counts `matchcast-bench polls` runs each store at, in ascending order (taken with
/// `transform: MatchCounts.parse`, as `BenchStoreList` is).
struct MatchCounts: Sendable, Equatable, CustomStringConvertible {
    let values: [Int]

    init(_ values: [Int]) { self.values = values }

    /// A comma list of counts, each 1...100,000, none twice; sorted ascending. The error says what is wrong.
    static func parse(_ text: String) throws(BenchSetupError) -> MatchCounts {
        var values: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: "")
            guard let count = Int(trimmed), Self.allowed.contains(count) else {
                throw BenchSetupError("'\(part.prefix(20))' is not a number of matches (1...100000)")
            }
            guard !values.contains(count) else { throw BenchSetupError("\(count) matches named twice") }
            values.append(count)
        }
        return MatchCounts(values.sorted())
    }

    static let allowed = 1...100_000

    var description: String { values.map(String.init).joined(separator: ",") }
}

/// What one store's polls cost beyond what `serve` spends anyway, from its runs at the fewest and the most matches:
/// the bench's per-poll and per-match figures divide everything serve spends (its ticker, metrics, the checkpointer, the
/// feed client's connections and buffers) by the polls and matches of that run, which overstates both at a small count.
/// The differences between two counts leave out what does not grow with the matches.
struct PollsMarginal: Sendable, Equatable {
    var store: BenchStoreKind
    var fewer: Int
    var more: Int
    /// serve's CPU for each poll added between the two runs.
    var cpuPerPoll: Duration
    /// serve's CPU a second that does not grow with the polls (the fewer run's CPU less its polls at `cpuPerPoll`).
    var cpuPerSecondBesides: Duration
    /// Resident memory grown for each match added (bytes).
    var rssPerMatch: Double

    /// One per store run at two counts or more (same mode), in the order the stores came.
    static func of(_ results: [PollsBenchmark.Result]) -> [PollsMarginal] {
        var stores: [BenchStoreKind] = []
        for result in results where !stores.contains(result.store) { stores.append(result.store) }
        return stores.compactMap { store in
            let runs = results.filter { $0.store == store && $0.serveCPU != nil }.sorted { $0.matches < $1.matches }
            guard let low = runs.first, let high = runs.last, high.matches > low.matches else { return nil }
            return PollsMarginal(low, high)
        }
    }

    /// Nil when the runs did not poll more with more matches (a run that fell behind).
    init?(_ low: PollsBenchmark.Result, _ high: PollsBenchmark.Result) {
        guard let lowCPU = low.serveCPU, let highCPU = high.serveCPU else { return nil }
        let lowPerSecond = lowCPU.seconds / max(low.window.seconds, 1e-9)
        let highPerSecond = highCPU.seconds / max(high.window.seconds, 1e-9)
        let addedPolls = high.pollsPerSecond - low.pollsPerSecond
        guard addedPolls > 0 else { return nil }
        let perPoll = max(0, highPerSecond - lowPerSecond) / addedPolls
        store = low.store
        fewer = low.matches
        more = high.matches
        cpuPerPoll = .seconds(perPoll)
        cpuPerSecondBesides = .seconds(max(0, lowPerSecond - perPoll * low.pollsPerSecond))
        rssPerMatch = Double((high.rssAfter - high.rssBefore) - (low.rssAfter - low.rssBefore)) / Double(high.matches - low.matches)
    }
}

extension PollsMarginal {
    /// `sqlite, 1000 → 10000 matches: 44.6 µs per added poll, 50.2 ms a second besides the polls, 15.7 KB per added match`
    var line: String {
        String(format: "%@, %d → %d matches: %.1f µs per added poll, %.1f ms a second besides the polls, %.1f KB per added match",
               store.rawValue, fewer, more, cpuPerPoll.seconds * 1_000_000, cpuPerSecondBesides.seconds * 1000, rssPerMatch / 1024)
    }
}
