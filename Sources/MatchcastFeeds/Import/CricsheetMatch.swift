import Foundation

/// The parts of a Cricsheet JSON match file (format 1.0 and 1.1, https://cricsheet.org/format/json/)
/// that `CricsheetImporter` reads. Unknown keys are ignored.
struct CricsheetMatch: Decodable {
    struct Info: Decodable {
        struct Event: Decodable {
            var name: String?
        }

        var teams: [String]
        var matchType: String
        var overs: Int?
        var dates: [String]?
        var venue: String?
        var city: String?
        var event: Event?
        var outcome: Outcome?

        private enum CodingKeys: String, CodingKey {
            case teams, overs, dates, venue, city, event, outcome
            case matchType = "match_type"
        }
    }

    struct Outcome: Decodable {
        var winner: String?
        /// The side that won a tie-break: super over, boundary count.
        var eliminator: String?
        /// The side that won a bowl-out.
        var bowlOut: String?
        /// `tie`, `draw` or `no result`, when there is no winner.
        var result: String?
        /// `D/L`, `VJD`, `Awarded`, …
        var method: String?

        private enum CodingKeys: String, CodingKey {
            case winner, eliminator, result, method
            case bowlOut = "bowl_out"
        }
    }

    struct Innings: Decodable {
        struct Target: Decodable {
            var runs: Int?
            /// Overs to reach it in; fractional in rare revised targets ("17.3" is read as 17.3).
            var overs: Double?
        }

        var team: String
        var overs: [Over]?
        var target: Target?
        var superOver: Bool?
        var declared: Bool?

        private enum CodingKeys: String, CodingKey {
            case team, overs, target, declared
            case superOver = "super_over"
        }
    }

    struct Over: Decodable {
        var over: Int?
        var deliveries: [Delivery]
    }

    struct Delivery: Decodable {
        struct Runs: Decodable {
            var batter: Int
            var extras: Int
            var total: Int

            private enum CodingKeys: String, CodingKey { case batter, batsman, extras, total }

            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                batter = try c.decodeIfPresent(Int.self, forKey: .batter) ?? c.decode(Int.self, forKey: .batsman)
                extras = try c.decodeIfPresent(Int.self, forKey: .extras) ?? 0
                total = try c.decode(Int.self, forKey: .total)
            }
        }

        /// Which extras the delivery carried; a key's presence is what matters for wides and no-balls.
        struct Extras: Decodable {
            var wides: Int?
            var noballs: Int?
            var byes: Int?
            var legbyes: Int?
            var penalty: Int?
        }

        var batter: String
        var bowler: String
        var nonStriker: String
        var runs: Runs
        var extras: Extras?
        var wickets: [Wicket]

        private enum CodingKeys: String, CodingKey {
            case batter, batsman, bowler, runs, extras, wickets
            case nonStriker = "non_striker"
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            batter = try c.decodeIfPresent(String.self, forKey: .batter) ?? c.decode(String.self, forKey: .batsman)
            bowler = try c.decode(String.self, forKey: .bowler)
            nonStriker = try c.decode(String.self, forKey: .nonStriker)
            runs = try c.decode(Runs.self, forKey: .runs)
            extras = try c.decodeIfPresent(Extras.self, forKey: .extras)
            wickets = try c.decodeIfPresent([Wicket].self, forKey: .wickets) ?? []
        }

        /// Neither a wide nor a no-ball: it counts towards the over.
        var isLegal: Bool { extras?.wides == nil && extras?.noballs == nil }
    }

    struct Wicket: Decodable {
        /// A fielder is `{"name": ...}` in current files and a bare name in some older ones.
        struct Fielder: Decodable {
            var name: String?

            private enum CodingKeys: String, CodingKey { case name }

            init(from decoder: any Decoder) throws {
                if let text = try? decoder.singleValueContainer().decode(String.self) {
                    name = text
                } else {
                    name = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .name)
                }
            }
        }

        var playerOut: String
        var kind: String
        var fielders: [Fielder]?

        private enum CodingKeys: String, CodingKey {
            case kind, fielders
            case playerOut = "player_out"
        }

        /// A batter who leaves without being out: not a wicket.
        var isRetiredNotOut: Bool { kind == "retired hurt" || kind == "retired not out" }

        /// Dismissals credited to the bowler.
        var creditsBowler: Bool {
            ["bowled", "caught", "caught and bowled", "lbw", "stumped", "hit wicket"].contains(kind)
        }
    }

    var info: Info
    var innings: [Innings]
}
