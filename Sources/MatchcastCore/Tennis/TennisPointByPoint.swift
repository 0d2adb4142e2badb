/// Reads Jeff Sackmann's tennis point-by-point encoding (tennis_pointbypoint),
/// where each point is told from the server's side, and turns it into the
/// `H`/`A` sequence that ``TennisEngine`` scores.
///
/// Per point: `S` or `A` (ace) the server won it, `R` or `D` (double fault)
/// the returner did. `;` ends a game, `.` ends a set, `/` marks a change of
/// server inside a tiebreak. `server1` serves first.
public enum TennisPointByPoint {
    /// Converts `pbp`, with `server1` playing as `server1Is`; score the result
    /// with `TennisRules.firstServer == server1Is`, since server1 serves first.
    ///
    /// `finalSetTiebreak` is what the last set reveals about the deciding-set
    /// rule: 7 or 10 when it ended in a tiebreak of that length, 0 when it ran
    /// past 7 games without one, nil when it shows nothing.
    public static func convert(
        pbp: String, server1Is: Side = .home
    ) throws(TennisError) -> (points: String, finalSetTiebreak: Int?) {
        var output: [UInt8] = []
        output.reserveCapacity(pbp.utf8.count)
        var game = GameReading(server: server1Is)
        var setGames = TennisPair()
        var evidence: Int?

        func endGame() {
            guard let gameWinner = game.lastWinner else { return }
            setGames[gameWinner] += 1
            if game.isTiebreak {
                evidence = game.tiebreakLength
            } else {
                evidence = max(setGames.home, setGames.away) > 7 ? 0 : nil
            }
            // Games alternate, and a tiebreak counts as one game: whoever
            // received its first point serves first in the next set. The
            // conformance data confirms this.
            game = GameReading(server: game.openingServer.opponent)
        }

        var offset = 0
        for byte in pbp.utf8 {
            switch byte {
            case UInt8(ascii: "S"), UInt8(ascii: "A"), UInt8(ascii: "R"), UInt8(ascii: "D"):
                let serverWon = byte == UInt8(ascii: "S") || byte == UInt8(ascii: "A")
                let winner = serverWon ? game.server : game.server.opponent
                game.record(winner)
                output.append(winner == .home ? UInt8(ascii: "H") : UInt8(ascii: "A"))
            case UInt8(ascii: "/"):
                game.server = game.server.opponent
                game.isTiebreak = true
            case UInt8(ascii: ";"):
                endGame()
            case UInt8(ascii: "."):
                endGame()
                setGames = TennisPair()
            default:
                throw .invalidCharacter(TennisEngine.scalar(in: pbp, atUTF8Offset: offset), at: offset)
            }
            offset += 1
        }
        // The record usually ends without a closing marker.
        endGame()
        return (String(decoding: output, as: UTF8.self), evidence)
    }
}

/// One game as the point-by-point text tells it.
private struct GameReading {
    let openingServer: Side
    var server: Side
    var isTiebreak = false
    var won = TennisPair()
    var lastWinner: Side?
    /// Points played when a 7-point tiebreak would first have been decided.
    var sevenPointEnd: Int?

    init(server: Side) {
        openingServer = server
        self.server = server
    }

    mutating func record(_ side: Side) {
        won[side] += 1
        lastWinner = side
        if sevenPointEnd == nil, max(won.home, won.away) >= 7, abs(won.home - won.away) >= 2 {
            sevenPointEnd = won.home + won.away
        }
    }

    /// A tiebreak that ran on past the point where 7 would have settled it was to 10.
    var tiebreakLength: Int {
        sevenPointEnd == won.home + won.away ? 7 : 10
    }
}
