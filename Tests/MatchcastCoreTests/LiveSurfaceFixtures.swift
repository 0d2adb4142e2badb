import Foundation
@testable import MatchcastCore

/// Matches for the live-surface tests, rendered by the real `MatchRenderer`, so that a change to a
/// renderer's strings breaks these tests instead of silently breaking progress.
enum SurfaceFixture {
    static let mi = Team(id: "mi", name: "Mumbai Indians", short: "MI")
    static let csk = Team(id: "csk", name: "Chennai Super Kings", short: "CSK")
    static let ars = Team(id: "ars", name: "Arsenal", short: "ARS")
    static let che = Team(id: "che", name: "Chelsea", short: "CHE")
    static let bos = Team(id: "bos", name: "Boston Red Sox", short: "BOS")
    static let nyy = Team(id: "nyy", name: "New York Yankees", short: "NYY")
    static let alcaraz = Team(id: "alc", name: "Carlos Alcaraz", short: "ALC")
    static let sinner = Team(id: "sin", name: "Jannik Sinner", short: "SIN")

    /// 2026-04-21T15:12:09Z.
    static let now = Date(timeIntervalSince1970: 1_776_784_329)
    static let nowSeconds = 1_776_784_329

    static func state(_ snapshot: MatchSnapshot) throws -> ContentState {
        try MatchRenderer.render(snapshot).contentState
    }

    /// The progress of `snapshot` as rendered, with its sport known (or not).
    static func progress(_ snapshot: MatchSnapshot, sportKnown: Bool = true) throws -> LiveSurface.Progress? {
        LiveSurface.Progress(contentState: try state(snapshot), sport: sportKnown ? snapshot.sport : nil)
    }

    // MARK: Snapshots

    static func totals(_ sport: Sport, _ status: MatchStatus = .live, period: String?, clock: String? = nil) -> MatchSnapshot {
        let home = Team(id: "h", name: "Home Town", short: "HOM")
        let away = Team(id: "a", name: "Away City", short: "AWY")
        return MatchSnapshot(
            id: "\(sport.rawValue)-1", sport: sport, status: status, home: sport == .football ? ars : home,
            away: sport == .football ? che : away,
            score: .teamTotals(TeamScore(home: 2, away: 1, period: period, clock: clock)))
    }

    static func football(_ status: MatchStatus = .live, period: String?, clock: String? = nil) -> MatchSnapshot {
        totals(.football, status, period: period, clock: clock)
    }

    static func baseball(_ status: MatchStatus = .live, inning: Int, half: BaseballScore.Half, outs: Int) -> MatchSnapshot {
        MatchSnapshot(
            id: "mlb-1", sport: .baseball, status: status, home: bos, away: nyy,
            score: .baseball(BaseballScore(home: 3, away: 2, inning: inning, half: half, outs: outs, bases: [true, false, false])))
    }

    static func tennis(_ points: String, bestOf: Int, status: MatchStatus = .live) -> MatchSnapshot {
        MatchSnapshot(
            id: "atp-1", sport: .tennis, status: status, home: alcaraz, away: sinner,
            score: .tennis(TennisScore(rules: TennisRules(bestOf: bestOf, firstServer: .home, finalSetTiebreak: 7), points: points)))
    }

    /// A set of six love games to `side`, then `games` more: the server alternates, the winner does not.
    static func tennisSets(_ sets: [Side], then games: [Side] = [], points: String = "") -> String {
        (sets.flatMap { Array(repeating: $0, count: 6) } + games).map { $0 == .home ? "HHHH" : "AAAA" }.joined() + points
    }

    static func cricket(
        _ status: MatchStatus = .live, format: CricketScore.Format = .t20, oversLimit: Int? = nil,
        innings: [CricketScore.Innings]
    ) -> MatchSnapshot {
        MatchSnapshot(
            id: "ipl-2026-m41", sport: .cricket, status: status, competition: "Indian Premier League", home: mi, away: csk,
            score: .cricket(CricketScore(
                format: format, oversLimit: oversLimit, innings: innings,
                batters: [.init(name: "Ruturaj Gaikwad", runs: 45, balls: 32, onStrike: true), .init(name: "Shivam Dube", runs: 12, balls: 9)],
                bowler: .init(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2))))
    }

    /// MI made 206/4 in 20 overs; CSK are 87/6 after 14.2 overs (86 balls), needing 120 off 34.
    static let t20Chase = cricket(innings: [
        .init(team: "mi", runs: 206, wickets: 4, balls: 120),
        .init(team: "csk", runs: 87, wickets: 6, balls: 86),
    ])

    // MARK: Surfaces

    static func attributes(_ snapshot: MatchSnapshot) -> ActivityAttributes {
        ActivityAttributes(activityId: "act_01JS0000000000000000000000", snapshot: snapshot)
    }

    /// A surface of `snapshot` as a push of `event` would carry it, attributes included.
    static func surface(
        _ snapshot: MatchSnapshot, event: ActivityEvent = .update, keyMoment: Bool = false, withAttributes: Bool = true,
        deepLink: String? = "matchcast://match/ipl-2026-m41"
    ) throws -> LiveSurface {
        LiveSurface(
            matchId: snapshot.id, event: event, contentState: try state(snapshot),
            attributes: withAttributes ? attributes(snapshot) : nil, isKeyMoment: keyMoment, timestamp: nowSeconds,
            staleDate: event == .end ? nil : nowSeconds + 300, dismissalDate: event == .end ? nowSeconds + 900 : nil,
            deepLink: deepLink)
    }

    /// A content-state whose every string is long and awkward: emoji, combining marks, quotes, controls.
    static func adversarialState(length: Int = 6000) -> ContentState {
        let piece = "⚽️e\u{301}\"\\\n🏏ज़ा"
        let long = String(repeating: piece, count: length / piece.unicodeScalars.count + 1)
        var state = ContentState(
            status: "live", statusText: long, home: .init(name: long, score: long), away: .init(name: long, score: long),
            summary: long)
        state.event = long
        state.result = long
        state.batting = long
        state.equation = long
        state.batters = Array(repeating: long, count: 4)
        state.bowler = long
        state.period = long
        state.clock = long
        return state
    }
}
