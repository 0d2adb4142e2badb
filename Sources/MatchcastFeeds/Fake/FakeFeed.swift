import Foundation
import MatchcastCore

/// A deterministic, seeded score feed of simulated matches, speaking the native v1 API
/// (docs/formats.md, "Feed (native v1)"). Used in-process by tests and the CLI, and over HTTP by `FakeFeedServer`.
///
/// Every scenario is simulated in full at init into a `FakeTimeline`; answering a request
/// only looks up the snapshot current at the simulated moment `elapsed × speed`. Nothing
/// reads the wall clock: the same seed gives the same bytes for the same request and moment.
///
/// Scenarios (each also its match's id): `cricket-t20` (MI v CSK, about 3 simulated hours),
/// `tennis-bo3` (Alcaraz v Sinner, 1.5–3 h), `football` (Arsenal v Chelsea, about 1 h 55 min),
/// `basketball` (Lakers v Celtics, about 2.6 h) and `baseball` (Yankees at Red Sox, about 3 h).
///
/// Simulated second 0 is `FakeFeed.epoch`. Each match shows `scheduled` from then and starts
/// `FakeFeed.leadIn` later; all matches are on the epoch's date. Timeline times are whole seconds.
///
/// - `/live-matches` lists matches that are live or in a break, and, for
///   `recentlyFinishedWindow` simulated seconds after they end, finished ones, so a poller of
///   the list alone still sees each final score.
/// - `/matches/{id}` answers any scenario in any state; 404 for an unknown id.
/// - `/schedule?date=YYYY-MM-DD` lists every match starting that (UTC) day.
///
/// `retryAfterMs` is what a real backend would ask for in simulated time (5 s live,
/// 30 s in a break, 60 s before the start, 5 min once final; the list takes the most
/// urgent of its matches), divided by `speed` and never below 1 ms. Every 200 carries an
/// `ETag` (`"v<seq>"` for one match) and a matching `If-None-Match` gets a 304 without a body.
public struct FakeFeed: Sendable {
    /// The scenarios a feed can run; each is also its match's id.
    public static let scenarioNames = ["cricket-t20", "tennis-bo3", "football", "basketball", "baseball"]

    /// Simulated second 0: 2026-04-21T14:00:00Z.
    public static let epoch = Date(timeIntervalSince1970: 1_776_780_000)

    /// Simulated seconds between the feed's start (every match `scheduled`) and the first ball, point or kick-off.
    public static let leadIn: Double = 120

    /// Simulated seconds a finished match stays in `/live-matches`.
    public static let recentlyFinishedWindow: Double = 600

    public let seed: UInt64
    /// Simulated seconds per real second.
    public let speed: Double
    /// One per scenario, in the order of `scenarioNames`.
    public let timelines: [FakeTimeline]

    /// Simulates the chosen scenarios (all of them when `scenarios` is nil).
    ///
    /// Throws when a scenario name is unknown or `speed` is not a positive finite number.
    public init(seed: UInt64 = 1, speed: Double = 1, scenarios: [String]? = nil) throws(InputError) {
        guard speed.isFinite, speed > 0 else {
            throw InputError(field: "speed", reason: "must be a positive number, got \(speed)")
        }
        let chosen = scenarios ?? Self.scenarioNames
        if let unknown = chosen.first(where: { !Self.scenarioNames.contains($0) }) {
            throw InputError(
                field: "scenarios",
                reason: "unknown scenario '\(unknown)'; known: \(Self.scenarioNames.joined(separator: ", "))")
        }
        guard !chosen.isEmpty else {
            throw InputError(field: "scenarios", reason: "choose at least one of \(Self.scenarioNames.joined(separator: ", "))")
        }
        self.seed = seed
        self.speed = speed
        self.timelines = Self.scenarioNames.filter(chosen.contains).map { Self.simulate($0, seed: seed) }
    }

    /// The timeline of one match, by id (= scenario name).
    public func timeline(_ id: String) -> FakeTimeline? {
        timelines.first { $0.id == id }
    }

    /// Simulated seconds since the feed started, after `elapsed` real time.
    public func simulatedSeconds(elapsed: Duration) -> Double {
        let parts = elapsed.components
        return (Double(parts.seconds) + Double(parts.attoseconds) * 1e-18) * speed
    }

    /// The snapshot of every match at the moment `elapsed` real time after the start.
    public func snapshots(elapsed: Duration) -> [MatchSnapshot] {
        let now = simulatedSeconds(elapsed: elapsed)
        return timelines.map { $0.snapshot(at: now) }
    }

    /// The date of a simulated moment.
    static func date(atSimulated seconds: Double) -> Date {
        epoch.addingTimeInterval(seconds)
    }

    private static func simulate(_ scenario: String, seed: UInt64) -> FakeTimeline {
        switch scenario {
        case "cricket-t20": CricketT20Simulation(seed: seed).run()
        case "tennis-bo3": TennisSimulation(seed: seed).run()
        case "football": FootballSimulation(seed: seed).run()
        case "basketball": BasketballSimulation(seed: seed).run()
        default: BaseballSimulation(seed: seed).run()
        }
    }
}
