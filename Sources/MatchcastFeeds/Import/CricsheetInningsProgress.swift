import Foundation
import MatchcastCore

/// One innings as it stands after each delivery: the totals, every batter's and bowler's
/// figures, and who is at the crease.
struct CricsheetInningsProgress {
    private struct BatterFigures {
        var runs = 0
        var balls = 0
    }

    private struct BowlerFigures {
        var balls = 0
        var runs = 0
        var wickets = 0
    }

    /// A wicket that fell on the last delivery, told as a scorecard would tell it.
    struct Dismissal {
        var text: String
    }

    var innings: CricketScore.Innings
    /// Batters at the crease, in the order they came in.
    private(set) var crease: [String] = []
    private var batters: [String: BatterFigures] = [:]
    private var bowlers: [String: BowlerFigures] = [:]
    private(set) var bowler: String?
    /// The batter who faced the last delivery.
    private var lastStriker: String?

    init(innings: CricketScore.Innings) {
        self.innings = innings
    }

    /// Scores one delivery; returns the dismissals it brought (retirements not out are not dismissals).
    mutating func record(_ ball: CricsheetMatch.Delivery) -> [Dismissal] {
        crease = crease.filter { $0 == ball.batter || $0 == ball.nonStriker }
        for name in [ball.batter, ball.nonStriker] where !crease.contains(name) { crease.append(name) }

        let extras = ball.extras
        innings.runs += ball.runs.total
        if ball.isLegal { innings.balls += 1 }

        var batter = batters[ball.batter] ?? BatterFigures()
        batter.runs += ball.runs.batter
        // A wide is not a ball faced; a no-ball is.
        if extras?.wides == nil { batter.balls += 1 }
        batters[ball.batter] = batter

        var figures = bowlers[ball.bowler] ?? BowlerFigures()
        if ball.isLegal { figures.balls += 1 }
        // Byes, leg-byes and penalty runs are not charged to the bowler.
        figures.runs += ball.runs.total - (extras?.byes ?? 0) - (extras?.legbyes ?? 0) - (extras?.penalty ?? 0)

        var dismissals: [Dismissal] = []
        for wicket in ball.wickets {
            crease.removeAll { $0 == wicket.playerOut }
            if wicket.isRetiredNotOut { continue }
            innings.wickets = min(innings.wickets + 1, 10)
            if wicket.creditsBowler { figures.wickets += 1 }
            dismissals.append(Dismissal(text: describe(wicket, bowler: ball.bowler)))
        }
        bowlers[ball.bowler] = figures
        bowler = ball.bowler
        lastStriker = ball.batter
        return dismissals
    }

    /// The batters at the crease; `nextStriker` (who faces the next ball, when known) is on strike,
    /// else whoever faced the last one.
    func battersIn(nextStriker: String?) -> [CricketScore.Batter] {
        let striker = nextStriker ?? lastStriker
        return crease.map { name in
            let figures = batters[name] ?? BatterFigures()
            return CricketScore.Batter(name: name, runs: figures.runs, balls: figures.balls, onStrike: name == striker)
        }
    }

    /// The bowler of the last delivery, with his figures in this innings.
    var bowlerFigures: CricketScore.Bowler? {
        guard let bowler, let figures = bowlers[bowler] else { return nil }
        return CricketScore.Bowler(name: bowler, balls: figures.balls, runs: figures.runs, wickets: figures.wickets)
    }

    /// "MS Dhoni c RG Sharma b JJ Bumrah 12 (9)".
    private func describe(_ wicket: CricsheetMatch.Wicket, bowler: String) -> String {
        let fielder = wicket.fielders?.compactMap(\.name).first
        let how: String
        switch wicket.kind {
        case "bowled": how = "b \(bowler)"
        case "caught": how = "c \(fielder ?? "sub") b \(bowler)"
        case "caught and bowled": how = "c & b \(bowler)"
        case "lbw": how = "lbw b \(bowler)"
        case "stumped": how = "st \(fielder ?? "sub") b \(bowler)"
        case "hit wicket": how = "hit wicket b \(bowler)"
        case "run out": how = fielder.map { "run out (\($0))" } ?? "run out"
        default: how = wicket.kind
        }
        let figures = batters[wicket.playerOut] ?? BatterFigures()
        return "\(wicket.playerOut) \(how) \(figures.runs) (\(figures.balls))"
    }
}
