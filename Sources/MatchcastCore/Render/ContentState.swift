/// The display-ready content of a match's Live Activity: every string the app shows, built here.
///
/// One shape for all sports; each family fills its own optional fields and leaves the
/// rest out of the JSON (docs/formats.md, "Content-state"):
/// - all: `status`, `statusText`, `home`, `away`, `summary`, optional `event` and `result`;
/// - cricket: `batting`, `runRate`, `equation`, `requiredRate`, `batters`, `bowler`;
/// - tennis: `sets`, `game`, `serving`;
/// - football, basketball, hockey, American football: `period`, `clock`;
/// - baseball: `inning`, `outs`, `bases`.
public struct ContentState: Sendable, Hashable, Codable {
    /// A competitor's line: short name and score as shown.
    public struct Line: Sendable, Hashable, Codable {
        public var name: String
        public var score: String

        public init(name: String, score: String) {
            self.name = name
            self.score = score
        }
    }

    /// Raw `MatchStatus` value, for the app's own styling.
    public var status: String
    /// "Live", "Innings break", "Final", "Abandoned".
    public var statusText: String
    public var home: Line
    public var away: Line
    /// One line for the compact and minimal presentations: "MI 87/6 (14.2)", "6-4 3-2 · 30-15", "2-1 · 2H 67'".
    public var summary: String
    /// The latest key event, as the alert said it.
    public var event: String?
    /// The result line once the match is final: "MI won by 27 runs".
    public var result: String?

    // Cricket
    public var batting: String?
    public var runRate: String?
    public var equation: String?
    public var requiredRate: String?
    public var batters: [String]?
    public var bowler: String?

    // Tennis
    public var sets: String?
    public var game: String?
    public var serving: Side?

    // Team totals
    public var period: String?
    public var clock: String?

    // Baseball
    public var inning: String?
    public var outs: String?
    public var bases: String?

    public init(status: String, statusText: String, home: Line, away: Line, summary: String) {
        self.status = status
        self.statusText = statusText
        self.home = home
        self.away = away
        self.summary = summary
    }
}
