/// The result line of a finished cricket match ("MI won by 27 runs"), derived from the innings totals.
///
/// Rules, in order (teams are named by their `short` name):
/// - Not final (`completed` / `abandoned`): no line. `abandoned`: "No result".
/// - Limited overs (T20, ODI). The chase is the first main (non-super-over) innings after the first
///   that states a `target`, else the second main innings; its target is the stated one, else the
///   first innings' runs + 1.
///   - Chase reached the target: "<chasing side> won by N wickets", N = 10 − wickets ("1 wicket").
///   - Chase fell more than one run short: "<side batting first> won by N runs", N = target − 1 − runs ("1 run").
///   - Chase ended on target − 1: "Match tied". Super-over innings (`superOver: true`, in pairs after
///     the main innings) decide it pair by pair the same way: "Match tied (ENG won the super over)".
///     When the super overs are tied too (or incomplete) and the feed's `winner` names a team:
///     "Match tied (ENG won on boundary count)"; with a stated `winner` and no super over at all:
///     "Match tied (ENG won)".
///   - A stated `winner` that the totals contradict wins (a rain-shortened chase decided on par score):
///     "CSK won", without a margin the totals cannot give.
///   - Fewer than two main innings: "<winner> won" when the feed names one, else "No result".
///   - A stated `method` ("D/L") is appended to a win: "CSK won by 5 wickets (D/L)", "CSK won (D/L)".
/// - Tests. With a stated `winner`:
///   - "ENG won by an innings and N runs" when the loser batted twice, the winner once, and the
///     loser's two totals sum below the winner's single innings (N is the difference);
///   - else, when the last innings is a chase (it states a target, or it is the fourth), by
///     wickets or runs as in limited overs, the target being the stated one or the runs the
///     chasing side trails by + 1;
///   - else "ENG won".
///   Without a stated `winner` a result is derived only when the totals settle it: an innings win
///   whose losing side was all out in its second innings, a fourth-innings chase that reached
///   its target (by wickets), or a fourth innings all out short of it (by runs; on target − 1,
///   "Match tied"). Anything else completed is "Match drawn".
public enum CricketResult {
    /// The result line, or nil while the match is not final.
    public static func line(for snapshot: MatchSnapshot, score: CricketScore) -> String? {
        switch snapshot.status {
        case .abandoned: return "No result"
        case .completed: break
        case .scheduled, .live, .break, .postponed: return nil
        }
        let names = CricketTeamNames(snapshot)
        let stated = score.winner.flatMap { snapshot.side(ofTeam: $0) != nil ? $0 : nil }
        let suffix = score.method.map { $0.isEmpty ? "" : " (\($0))" } ?? ""
        return score.format == .test
            ? testLine(score, stated: stated, names: names, suffix: suffix)
            : limitedLine(score, stated: stated, names: names, suffix: suffix)
    }

    /// A decided contest between an innings and the chase of it.
    private enum Outcome: Equatable {
        case byWickets(team: String, wickets: Int)
        case byRuns(team: String, runs: Int)
        case tie

        var winner: String? {
            switch self {
            case .byWickets(let team, _), .byRuns(let team, _): team
            case .tie: nil
            }
        }
    }

    /// Decides a chase of `target` by `chase` against `first`'s team; nil while the chase could still go on.
    private static func outcome(first: String, chase: CricketScore.Innings, target: Int, settled: Bool) -> Outcome? {
        if chase.runs >= target { return .byWickets(team: chase.team, wickets: max(0, 10 - chase.wickets)) }
        guard settled else { return nil }
        return chase.runs == target - 1 ? .tie : .byRuns(team: first, runs: target - 1 - chase.runs)
    }

    private static func text(_ outcome: Outcome, _ names: CricketTeamNames, _ suffix: String) -> String {
        switch outcome {
        case .byWickets(let team, let n): "\(names[team]) won by \(plural(n, "wicket"))\(suffix)"
        case .byRuns(let team, let n): "\(names[team]) won by \(plural(n, "run"))\(suffix)"
        case .tie: "Match tied"
        }
    }

    static func plural(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    // MARK: Limited overs

    private static func limitedLine(_ score: CricketScore, stated: String?, names: CricketTeamNames, suffix: String) -> String {
        let main = score.mainInnings
        guard main.count >= 2, let chase = score.chaseIndex.map({ main[$0] }) else {
            return stated.map { "\(names[$0]) won\(suffix)" } ?? "No result"
        }
        let first = main[0]
        let target = chase.target ?? first.runs + 1
        // The main innings are over once the match is completed, so the chase is always decided here.
        let result = outcome(first: first.team, chase: chase, target: target, settled: true) ?? .tie
        if let stated, result.winner != nil, result.winner != stated { return "\(names[stated]) won\(suffix)" }
        guard result == .tie else { return text(result, names, suffix) }
        return "Match tied" + tieBreak(score, stated: stated, names: names)
    }

    /// " (ENG won the super over)", " (ENG won on boundary count)", " (ENG won)" or "".
    private static func tieBreak(_ score: CricketScore, stated: String?, names: CricketTeamNames) -> String {
        let supers = score.innings.filter(\.superOver)
        var index = 0
        while index + 1 < supers.count {
            let (first, chase) = (supers[index], supers[index + 1])
            let result = outcome(first: first.team, chase: chase, target: chase.target ?? first.runs + 1, settled: true)
            if let team = result?.winner { return " (\(names[team]) won the super over)" }
            index += 2
        }
        guard let stated else { return "" }
        return supers.isEmpty ? " (\(names[stated]) won)" : " (\(names[stated]) won on boundary count)"
    }

    // MARK: Tests

    private static func testLine(_ score: CricketScore, stated: String?, names: CricketTeamNames, suffix: String) -> String {
        let main = score.mainInnings
        let innings = inningsWin(main)
        let last = main.last
        let chase: Outcome? = last.flatMap { last in
            guard main.count >= 2, last.target != nil || main.count == 4 else { return nil }
            let first = main.first { $0.team != last.team }?.team ?? ""
            return outcome(first: first, chase: last, target: testTarget(main), settled: last.wickets >= 10)
        }
        if let stated {
            if let innings, innings.team == stated {
                return "\(names[stated]) won by an innings and \(plural(innings.margin, "run"))\(suffix)"
            }
            if let chase, chase.winner == stated { return text(chase, names, suffix) }
            if let last, last.target != nil || main.count == 4, last.team != stated, last.runs < testTarget(main) - 1 {
                return text(.byRuns(team: stated, runs: testTarget(main) - 1 - last.runs), names, suffix)
            }
            return "\(names[stated]) won\(suffix)"
        }
        if let innings, innings.loserAllOut {
            return "\(names[innings.team]) won by an innings and \(plural(innings.margin, "run"))\(suffix)"
        }
        if let chase, main.count == 4 { return text(chase, names, suffix) }
        return "Match drawn"
    }

    /// The innings win a three-innings Test shows, if its totals allow one.
    private static func inningsWin(_ main: [CricketScore.Innings]) -> (team: String, margin: Int, loserAllOut: Bool)? {
        guard main.count == 3 else { return nil }
        let twice = main[1].team == main[2].team ? main[1].team : main[0].team == main[2].team ? main[0].team : nil
        guard let loser = twice, let once = main.first(where: { $0.team != loser }) else { return nil }
        let loserRuns = main.filter { $0.team == loser }.reduce(0) { $0 + $1.runs }
        guard loserRuns < once.runs else { return nil }
        return (once.team, once.runs - loserRuns, main[2].wickets >= 10)
    }

    /// The last Test innings' target: the stated one, else the runs its side trails by + 1.
    static func testTarget(_ main: [CricketScore.Innings]) -> Int {
        guard let last = main.last else { return 0 }
        if let target = last.target { return target }
        let earlier = main.dropLast()
        let theirs = earlier.filter { $0.team != last.team }.reduce(0) { $0 + $1.runs }
        let ours = earlier.filter { $0.team == last.team }.reduce(0) { $0 + $1.runs }
        return theirs - ours + 1
    }
}

/// Short names by team id; an id neither side has is shown upper-cased rather than dropped.
struct CricketTeamNames {
    let snapshot: MatchSnapshot

    init(_ snapshot: MatchSnapshot) { self.snapshot = snapshot }

    subscript(id: String) -> String {
        snapshot.side(ofTeam: id).map { snapshot.team($0).short } ?? id.uppercased()
    }
}

extension CricketScore {
    /// The innings of the match proper, without super overs.
    var mainInnings: [Innings] { innings.filter { !$0.superOver } }

    /// Index in `mainInnings` of a limited-overs chase: the first innings after the first that
    /// states a target, else the second.
    var chaseIndex: Int? {
        let main = mainInnings
        guard main.count >= 2 else { return nil }
        return main.indices.dropFirst().first { main[$0].target != nil } ?? 1
    }

    /// Overs this innings may last: its own limit, one for a super over, else the match's (none in Tests).
    func maxOvers(of innings: Innings) -> Int? {
        innings.oversLimit ?? (innings.superOver ? 1 : effectiveOversLimit)
    }

    /// Wickets that end this innings: two in a super over, ten otherwise.
    func maxWickets(of innings: Innings) -> Int { innings.superOver ? 2 : 10 }

    /// Whether this innings can go on no further: all out, overs used up, or declared.
    func isClosed(_ innings: Innings) -> Bool {
        if innings.declared || innings.wickets >= maxWickets(of: innings) { return true }
        guard let limit = maxOvers(of: innings) else { return false }
        return innings.balls >= limit * 6
    }
}
