/// Cricket's part of a content-state and its `derived` score (docs/formats.md, "Content-state").
///
/// The current innings is the last one the feed lists. A super-over innings is marked "SO" wherever
/// it is shown ("ENG SO 15/0 (1.0)"), so that it is never read as the main innings' score.
public enum CricketRender {
    /// Every innings with overs and run rate, the current innings' target, the equation while a
    /// limited-overs chase is on, and the result once final.
    ///
    /// The target is the current innings' stated one; the chasing innings of a limited-overs pair
    /// (main innings or super over) without one chases its partner's runs + 1; a fourth Test innings
    /// without one chases the runs it trails by + 1. `need` is set only while the chase can still go
    /// either way: not final, target not reached, wickets and balls left.
    public static func derived(_ snapshot: MatchSnapshot, _ score: CricketScore) -> CricketDerived {
        let innings = score.innings.map {
            CricketDerived.Innings(
                team: $0.team, runs: $0.runs, wickets: $0.wickets,
                overs: CricketFormat.overs(balls: $0.balls),
                runRate: CricketFormat.runRate(runs: $0.runs, balls: $0.balls))
        }
        return CricketDerived(
            innings: innings, target: target(score), need: need(snapshot, score),
            result: CricketResult.line(for: snapshot, score: score))
    }

    /// Fills the cricket fields, both score lines, `result` and `summary`; leaves status, names and event to the caller.
    ///
    /// Each side's score is its latest main innings ("" before it bats); in Tests earlier innings
    /// come first without overs ("210 & 87/6 (14.2)"); a super over is appended ("241 (50.0) · SO 15/1 (1.0)").
    /// Tests show "Lead by N" / "Trail by N" / "Scores level" once both sides have batted, and
    /// "Need N to win" in a fourth innings. `summary` is the result when final, else the current
    /// innings' line with the equation ("MI 87/6 (14.2) · Need 78 off 34"), or "MI v CSK" before a ball.
    public static func apply(_ snapshot: MatchSnapshot, _ score: CricketScore, to state: inout ContentState) {
        let names = CricketTeamNames(snapshot)
        state.home.score = sideScore(snapshot.home.id, score)
        state.away.score = sideScore(snapshot.away.id, score)
        let result = CricketResult.line(for: snapshot, score: score)
        state.result = result
        let current = score.innings.last
        state.batting = snapshot.status.isFinal ? nil : current.map { names[$0.team] }
        state.runRate = current.map { "RR \(CricketFormat.runRate(runs: $0.runs, balls: $0.balls))" }
        let need = need(snapshot, score)
        state.equation = need.map { "Need \($0.runs) off \($0.balls)" } ?? testEquation(snapshot, score)
        state.requiredRate = need.map { "RRR \(CricketFormat.runRate(runs: $0.runs, balls: $0.balls))" }
        let batters = score.batters.filter(\.onStrike) + score.batters.filter { !$0.onStrike }
        state.batters = batters.isEmpty ? nil : batters.map(CricketFormat.batter)
        state.bowler = score.bowler.map(CricketFormat.bowler)
        if let result {
            state.summary = result
        } else if let current {
            state.summary = scoreLine(current, names) + (state.equation.map { " · \($0)" } ?? "")
        } else {
            state.summary = "\(snapshot.home.short) v \(snapshot.away.short)"
        }
    }

    /// "MI 87/6 (14.2)", or "ENG SO 15/0 (1.0)" for a super over: the line alerts and the summary lead with.
    static func scoreLine(_ innings: CricketScore.Innings, _ names: CricketTeamNames) -> String {
        "\(names[innings.team]) \(innings.superOver ? "SO " : "")\(CricketFormat.score(innings))"
    }

    private static func sideScore(_ team: String, _ score: CricketScore) -> String {
        let main = score.mainInnings.filter { $0.team == team }
        var text: String
        if score.format == .test, let last = main.last {
            text = (main.dropLast().map(CricketFormat.total) + [CricketFormat.score(last)]).joined(separator: " & ")
        } else {
            text = main.last.map(CricketFormat.score) ?? ""
        }
        if let superOver = score.innings.last(where: { $0.superOver && $0.team == team }) {
            text += "\(text.isEmpty ? "" : " · ")SO \(CricketFormat.score(superOver))"
        }
        return text
    }

    /// The current innings' target; see `derived`.
    static func target(_ score: CricketScore) -> Int? {
        guard let current = score.innings.last else { return nil }
        if let target = current.target { return target }
        if score.format == .test {
            let main = score.mainInnings
            return !current.superOver && main.count == 4 ? CricketResult.testTarget(main) : nil
        }
        let group = score.innings.filter { $0.superOver == current.superOver }
        // Limited-overs innings come in pairs (main, then each super over); the second of a pair chases.
        guard group.count % 2 == 0, let partner = group.dropLast().last else { return nil }
        return partner.runs + 1
    }

    /// Runs and balls still needed in a live limited-overs chase; see `derived`.
    static func need(_ snapshot: MatchSnapshot, _ score: CricketScore) -> CricketDerived.Need? {
        guard !snapshot.status.isFinal, score.format != .test, let current = score.innings.last,
              let target = target(score), let limit = score.maxOvers(of: current),
              !score.isClosed(current), current.runs < target
        else { return nil }
        return .init(runs: target - current.runs, balls: limit * 6 - current.balls)
    }

    private static func testEquation(_ snapshot: MatchSnapshot, _ score: CricketScore) -> String? {
        let main = score.mainInnings
        guard score.format == .test, !snapshot.status.isFinal, let current = main.last,
              main.contains(where: { $0.team != current.team })
        else { return nil }
        if main.count == 4 {
            let runs = CricketResult.testTarget(main) - current.runs
            return runs > 0 ? "Need \(runs) to win" : nil
        }
        let ours = main.filter { $0.team == current.team }.reduce(0) { $0 + $1.runs }
        let theirs = main.filter { $0.team != current.team }.reduce(0) { $0 + $1.runs }
        return ours > theirs ? "Lead by \(ours - theirs)" : ours < theirs ? "Trail by \(theirs - ours)" : "Scores level"
    }
}
