import Foundation
import MatchcastCore

/// Hand-built snapshots and tokens.
public enum ManagerFixtures {
    public static let home = Team(id: "ars", name: "Arsenal", short: "ARS")
    public static let away = Team(id: "che", name: "Chelsea", short: "CHE")

    public static func football(
        _ id: String, _ status: MatchStatus = .live, home: Int = 0, away: Int = 0, period: String? = "1H",
        clock: String? = "1'", seq: Int? = nil, events: [MatchEvent] = []
    ) -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .football, status: status, seq: seq, competition: "Premier League",
            home: Self.home, away: Self.away,
            score: .teamTotals(TeamScore(home: home, away: away, period: period, clock: clock)), events: events)
    }

    public static func tennis(_ id: String, _ status: MatchStatus = .live, points: String) -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .tennis, status: status,
            home: Team(id: "sin", name: "Jannik Sinner", short: "SIN"),
            away: Team(id: "alc", name: "Carlos Alcaraz", short: "ALC"),
            score: .tennis(TennisScore(rules: TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: 7), points: points)))
    }

    /// A 64-hex-digit token, distinct per `kind` and `n`.
    public static func token(_ kind: UInt8, _ n: Int) -> String {
        String(format: "%02x", kind) + String(format: "%062x", n)
    }

    public static func pushToStart(_ n: Int) -> String { token(0xaa, n) }
    public static func update(_ n: Int) -> String { token(0xbb, n) }
}
