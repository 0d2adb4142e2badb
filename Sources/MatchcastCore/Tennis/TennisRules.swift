/// The format of a tennis match: the parts that decide how points become
/// games, sets and a winner. Mirrors the tennis `score` of the feed contract.
public struct TennisRules: Sendable, Hashable, Codable {
    /// Sets in the match: 3 or 5.
    public var bestOf: Int
    /// Who serves the first point of the match.
    public var firstServer: Side
    /// The tiebreak played at 6-6 in the deciding set: 7 or 10 points, or 0
    /// for an advantage final set that runs until someone leads by two games.
    public var finalSetTiebreak: Int

    public init(bestOf: Int, firstServer: Side, finalSetTiebreak: Int) {
        self.bestOf = bestOf
        self.firstServer = firstServer
        self.finalSetTiebreak = finalSetTiebreak
    }

    /// Sets a player must win to take the match.
    var setsToWin: Int { bestOf / 2 + 1 }

    func validate() throws(TennisError) {
        guard bestOf == 3 || bestOf == 5 else { throw .invalidBestOf(bestOf) }
        guard [0, 7, 10].contains(finalSetTiebreak) else {
            throw .invalidFinalSetTiebreak(finalSetTiebreak)
        }
    }
}
