/// Display strings for cricket figures as docs/formats.md shows them: "87/6 (14.2)", "RR 6.07",
/// "Rohit Sharma* 45 (32)", "J Bumrah 2/18 (3.2)".
///
/// Integer arithmetic only, so the same figures give the same bytes on every platform.
public enum CricketFormat {
    /// Completed overs and the legal balls of the over in progress: 86 balls is "14.2".
    public static func overs(balls: Int) -> String {
        let balls = max(0, balls)
        return "\(balls / 6).\(balls % 6)"
    }

    /// "87/6 (14.2)"; all out drops the wickets, "241 (50.0)"; a declaration adds "d", "450/7d (120.3)".
    public static func score(_ innings: CricketScore.Innings) -> String {
        "\(total(innings)) (\(overs(balls: innings.balls)))"
    }

    /// The score without overs ("87/6", "241", "450/7d"), as earlier Test innings read: "210 & 87/6 (14.2)".
    public static func total(_ innings: CricketScore.Innings) -> String {
        let wickets = innings.wickets >= 10 ? "" : "/\(innings.wickets)"
        return "\(innings.runs)\(wickets)\(innings.declared ? "d" : "")"
    }

    /// Runs per over to two decimals: "6.07" for 87 off 86 balls, "0.00" before a ball is bowled.
    ///
    /// Rounds half away from zero on the exact fraction `runs * 6 / balls`, computed in integers
    /// so that a binary float never turns x.xx5 into x.xx4.
    public static func runRate(runs: Int, balls: Int) -> String {
        guard balls > 0 else { return "0.00" }
        let hundredths = (abs(runs) * 1200 + balls) / (2 * balls)
        let cents = hundredths % 100
        return "\(runs < 0 ? "-" : "")\(hundredths / 100).\(cents < 10 ? "0" : "")\(cents)"
    }

    /// "Rohit Sharma* 45 (32)"; the `*` marks the striker.
    public static func batter(_ batter: CricketScore.Batter) -> String {
        "\(batter.name)\(batter.onStrike ? "*" : "") \(batter.runs) (\(batter.balls))"
    }

    /// A bowler's name as scorecards print it: given names become initials, the surname stays whole.
    ///
    /// "Jasprit Bumrah" is "J Bumrah"; words without lower-case letters are already initials and are
    /// kept ("CR Woakes", "MS Dhoni"); the surname starts at the first lower-case particle after the
    /// given names ("Quinton de Kock" is "Q de Kock", "AB de Villiers" stays), else it is the last word.
    /// Hyphenated given names give one initial a part ("Jean-Paul Duminy" is "JP Duminy"). One word stays.
    public static func bowlerName(_ name: String) -> String {
        let words = name.split(separator: " ")
        guard words.count > 1 else { return words.first.map(String.init) ?? name }
        let surnameStart = words.indices.dropFirst().first { words[$0].first?.isLowercase == true } ?? words.count - 1
        let initials = words[..<surnameStart].map { word in
            word.contains(where: \.isLowercase)
                ? word.split(separator: "-").compactMap { $0.first?.uppercased() }.joined()
                : String(word)
        }
        return ([initials.joined()] + words[surnameStart...].map(String.init)).joined(separator: " ")
    }

    /// "J Bumrah 2/18 (3.2)": wickets/runs conceded (overs bowled).
    public static func bowler(_ bowler: CricketScore.Bowler) -> String {
        "\(bowlerName(bowler.name)) \(bowler.wickets)/\(bowler.runs) (\(overs(balls: bowler.balls)))"
    }
}
