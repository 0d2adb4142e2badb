import Foundation

/// What a Cricsheet file says about its own match, read with `JSONSerialization` so the check
/// does not share the importer's decoding: each innings' runs (sum of `runs.total`), wickets
/// (without retirements not out), overs (legal balls), and the result line `info.outcome` implies.
struct CricsheetFacts {
    struct Innings {
        var team: String
        var runs = 0
        var wickets = 0
        var balls = 0
        var superOver = false
        var overs: String { "\(balls / 6).\(balls % 6)" }
    }

    var innings: [Innings] = []
    let outcome: [String: Any]

    var noResult: Bool { outcome["result"] as? String == "no result" }

    init(_ data: Data) throws {
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        outcome = (json["info"] as? [String: Any])?["outcome"] as? [String: Any] ?? [:]
        for raw in json["innings"] as? [[String: Any]] ?? [] {
            var innings = Innings(team: raw["team"] as? String ?? "?", superOver: raw["super_over"] as? Bool ?? false)
            var deliveries = 0
            for over in raw["overs"] as? [[String: Any]] ?? [] {
                for ball in over["deliveries"] as? [[String: Any]] ?? [] {
                    deliveries += 1
                    innings.runs += (ball["runs"] as? [String: Any])?["total"] as? Int ?? 0
                    let extras = ball["extras"] as? [String: Any] ?? [:]
                    if extras["wides"] == nil && extras["noballs"] == nil { innings.balls += 1 }
                    for wicket in ball["wickets"] as? [[String: Any]] ?? [] {
                        let kind = wicket["kind"] as? String ?? ""
                        if kind != "retired hurt" && kind != "retired not out" { innings.wickets += 1 }
                    }
                }
            }
            if deliveries > 0 { self.innings.append(innings) }
        }
    }

    /// The line `info.outcome` implies, naming teams by `short`.
    func resultLine(short: (String) -> String) -> String {
        let method = (outcome["method"] as? String).map { " (\($0))" } ?? ""
        let by = outcome["by"] as? [String: Any] ?? [:]
        func plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        switch outcome["result"] as? String {
        case "no result": return "No result"
        case "draw": return "Match drawn"
        case "tie":
            guard let eliminator = outcome["eliminator"] as? String ?? outcome["bowl_out"] as? String else { return "Match tied" }
            let supers = innings.filter(\.superOver)
            if supers.isEmpty { return "Match tied (\(short(eliminator)) won)" }
            let decided = stride(from: 0, to: supers.count - 1, by: 2).contains { supers[$0].runs != supers[$0 + 1].runs }
            return "Match tied (\(short(eliminator)) \(decided ? "won the super over" : "won on boundary count"))"
        default:
            guard let winner = outcome["winner"] as? String else { return "No result" }
            if let n = by["innings"] as? Int, n > 0, let runs = by["runs"] as? Int {
                return "\(short(winner)) won by an innings and \(plural(runs, "run"))\(method)"
            }
            if let runs = by["runs"] as? Int { return "\(short(winner)) won by \(plural(runs, "run"))\(method)" }
            if let wickets = by["wickets"] as? Int { return "\(short(winner)) won by \(plural(wickets, "wicket"))\(method)" }
            return "\(short(winner)) won\(method)"
        }
    }
}
