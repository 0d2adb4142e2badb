/// The score of a tennis match at one moment, derived from its point sequence
/// by ``TennisEngine``. Field meanings follow the tennis `derived` object of
/// the wire contract, plus counters a caller needs to spot key moments by
/// comparing two states (a break of serve, a game or set won).
public struct TennisState: Sendable, Hashable {
    /// Every completed set as `[home, away]` games and, while the match is not
    /// over, the current set too (`[[6,4],[0,0]]` right after the first set).
    public var sets: [[Int]]
    /// The current set's games `[home, away]`; after the match, the last set's.
    public var games: [Int]
    /// The current game's score per side: `"0"|"15"|"30"|"40"|"AD"`, or plain
    /// point counts in a tiebreak. `["0","0"]` once the match is over.
    public var points: [String]
    /// Whether the current game is a tiebreak.
    public var tiebreak: Bool
    /// Who serves the next point.
    public var server: Side
    /// Who won the match, once it is over.
    public var winner: Side?
    /// Completed sets won `[home, away]`.
    public var setsWon: [Int]
    /// Parallel to the completed sets: the tiebreak's points `[home, away]`,
    /// nil when the set had no tiebreak, so a formatter can print "7-6(4)".
    public var tiebreakScores: [[Int]?]
    /// Service games won by the receiver `[home, away]`; tiebreaks never count.
    public var breaks: [Int]
    /// Games completed in the whole match, tiebreaks included.
    public var gamesPlayed: Int
    /// Points played in the whole match.
    public var pointsPlayed: Int

    public init(
        sets: [[Int]], games: [Int], points: [String], tiebreak: Bool, server: Side,
        winner: Side?, setsWon: [Int], tiebreakScores: [[Int]?], breaks: [Int],
        gamesPlayed: Int, pointsPlayed: Int
    ) {
        self.sets = sets
        self.games = games
        self.points = points
        self.tiebreak = tiebreak
        self.server = server
        self.winner = winner
        self.setsWon = setsWon
        self.tiebreakScores = tiebreakScores
        self.breaks = breaks
        self.gamesPlayed = gamesPlayed
        self.pointsPlayed = pointsPlayed
    }
}
