/// Derives a tennis score from the ordered winners of every point, so the
/// score is never stored and can never disagree with the points.
public enum TennisEngine {
    /// Scores `points`, one `H` (home won the point) or `A` (away) a point.
    public static func derive(points: String, rules: TennisRules) throws(TennisError) -> TennisState {
        var scorer = try TennisScorer(rules: rules)
        // Bytes, not Characters: every valid character is ASCII, so the byte
        // offset of the first bad one is also its position in the string.
        var offset = 0
        for byte in points.utf8 {
            let side: Side
            switch byte {
            case UInt8(ascii: "H"): side = .home
            case UInt8(ascii: "A"): side = .away
            default:
                throw .invalidCharacter(scalar(in: points, atUTF8Offset: offset), at: offset)
            }
            try scorer.record(side, index: offset)
            offset += 1
        }
        return scorer.state
    }

    /// Scores a sequence of point winners.
    public static func derive(points: [Side], rules: TennisRules) throws(TennisError) -> TennisState {
        var scorer = try TennisScorer(rules: rules)
        for (index, side) in points.enumerated() {
            try scorer.record(side, index: index)
        }
        return scorer.state
    }

    /// Only called on the error path, where everything before `offset` was ASCII.
    static func scalar(in text: String, atUTF8Offset offset: Int) -> Character {
        let index = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
        return Character(text.unicodeScalars[index])
    }
}

/// Why a point sequence, a point-by-point record or a rule set could not be scored.
public struct TennisError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Sendable, Hashable {
        case invalidCharacter(Character, index: Int)
        case pointAfterMatchEnd(index: Int)
        case invalidBestOf(Int)
        case invalidFinalSetTiebreak(Int)
    }

    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// A character that is not a point (or, in point-by-point text, a marker),
    /// at its zero-based position.
    public static func invalidCharacter(_ character: Character, at index: Int) -> TennisError {
        TennisError(.invalidCharacter(character, index: index))
    }

    /// The point at zero-based position `index` comes after the match was won.
    public static func pointAfterMatchEnd(at index: Int) -> TennisError {
        TennisError(.pointAfterMatchEnd(index: index))
    }

    /// `bestOf` is neither 3 nor 5.
    public static func invalidBestOf(_ bestOf: Int) -> TennisError {
        TennisError(.invalidBestOf(bestOf))
    }

    /// `finalSetTiebreak` is none of 0, 7 and 10.
    public static func invalidFinalSetTiebreak(_ value: Int) -> TennisError {
        TennisError(.invalidFinalSetTiebreak(value))
    }

    /// Position in the input the error is about, when it is about one.
    public var index: Int? {
        switch kind {
        case .invalidCharacter(_, let index), .pointAfterMatchEnd(let index): index
        case .invalidBestOf, .invalidFinalSetTiebreak: nil
        }
    }

    public var description: String {
        switch kind {
        case .invalidCharacter(let character, let index):
            "invalid character \(String(reflecting: String(character))) at index \(index)"
        case .pointAfterMatchEnd(let index):
            "point at index \(index) comes after the match was already won"
        case .invalidBestOf(let bestOf):
            "invalid rules: bestOf must be 3 or 5, got \(bestOf)"
        case .invalidFinalSetTiebreak(let value):
            "invalid rules: finalSetTiebreak must be 0, 7 or 10, got \(value)"
        }
    }
}

/// A count per side, kept as two stored integers so the scoring loop never
/// touches an array.
struct TennisPair: Sendable, Hashable {
    var home = 0
    var away = 0

    subscript(side: Side) -> Int {
        get { side == .home ? home : away }
        set {
            if side == .home { home = newValue } else { away = newValue }
        }
    }

    var array: [Int] { [home, away] }
}

/// The running state behind ``TennisEngine``; one `record` per point, constant work each.
struct TennisScorer: Sendable {
    let rules: TennisRules
    private var completedSets: [[Int]] = []
    private var tiebreakScores: [[Int]?] = []
    private var games = TennisPair()
    private var points = TennisPair()
    private var setsWon = TennisPair()
    private var breaks = TennisPair()
    private var server: Side
    /// Points needed to win the current tiebreak; 0 outside a tiebreak.
    private var tiebreakTarget = 0
    private var tiebreakFirstServer: Side
    private var gamesPlayed = 0
    private var pointsPlayed = 0
    private var winner: Side?

    init(rules: TennisRules) throws(TennisError) {
        try rules.validate()
        self.rules = rules
        server = rules.firstServer
        tiebreakFirstServer = rules.firstServer
        completedSets.reserveCapacity(rules.bestOf)
        tiebreakScores.reserveCapacity(rules.bestOf)
    }

    mutating func record(_ side: Side, index: Int) throws(TennisError) {
        guard winner == nil else { throw .pointAfterMatchEnd(at: index) }
        pointsPlayed += 1
        points[side] += 1
        let won = points[side] >= (tiebreakTarget > 0 ? tiebreakTarget : 4)
            && points[side] - points[side.opponent] >= 2
        if tiebreakTarget > 0 {
            if won {
                winTiebreak(side)
            } else if (points.home + points.away) % 2 == 1 {
                // One serve, then two each: the server changes after points 1, 3, 5...
                server = server.opponent
            }
        } else if won {
            winGame(side)
        }
    }

    private var isDecidingSet: Bool { setsWon.home + setsWon.away == rules.bestOf - 1 }

    private mutating func winGame(_ side: Side) {
        if side != server { breaks[side] += 1 }
        games[side] += 1
        gamesPlayed += 1
        points = TennisPair()
        server = server.opponent
        if games[side] >= 6 && games[side] - games[side.opponent] >= 2 {
            winSet(side, tiebreak: nil)
        } else if games.home == 6 && games.away == 6 {
            let length = isDecidingSet ? rules.finalSetTiebreak : 7
            if length > 0 {
                tiebreakTarget = length
                tiebreakFirstServer = server
            }
        }
    }

    private mutating func winTiebreak(_ side: Side) {
        let score = points.array
        games[side] += 1
        gamesPlayed += 1
        points = TennisPair()
        tiebreakTarget = 0
        // The tiebreak counts as one game for the service order: whoever
        // received its first point opens the next set.
        server = tiebreakFirstServer.opponent
        winSet(side, tiebreak: score)
    }

    private mutating func winSet(_ side: Side, tiebreak: [Int]?) {
        completedSets.append(games.array)
        tiebreakScores.append(tiebreak)
        setsWon[side] += 1
        if setsWon[side] == rules.setsToWin {
            winner = side
        } else {
            games = TennisPair()
        }
    }

    var state: TennisState {
        TennisState(
            sets: winner == nil ? completedSets + [games.array] : completedSets,
            games: games.array,
            points: pointLabels,
            tiebreak: tiebreakTarget > 0,
            server: server,
            winner: winner,
            setsWon: setsWon.array,
            tiebreakScores: tiebreakScores,
            breaks: breaks.array,
            gamesPlayed: gamesPlayed,
            pointsPlayed: pointsPlayed
        )
    }

    private var pointLabels: [String] {
        if tiebreakTarget > 0 { return [String(points.home), String(points.away)] }
        if points.home >= 3 && points.away >= 3 {
            if points.home == points.away { return ["40", "40"] }
            return points.home > points.away ? ["AD", "40"] : ["40", "AD"]
        }
        let labels = ["0", "15", "30", "40"]
        return [labels[points.home], labels[points.away]]
    }
}
