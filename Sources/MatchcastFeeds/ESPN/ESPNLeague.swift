import MatchcastCore

/// An ESPN site-API `{sport}/{league}` pair (`soccer/eng.1`, `football/nfl`) and the Matchcast
/// sport its events become.
///
/// | ESPN sport | Matchcast sport | periods |
/// |---|---|---|
/// | `soccer/*` (any league, `all` too) | `football` | `1H` `2H`, `ET`, `PEN` |
/// | `basketball/*` | `basketball` | `Q1`…`Q4` (`1H` `2H` for `mens-college-basketball`), `OT`, `2OT` |
/// | `football/*` (`nfl`, `college-football`, …) | `americanFootball` | `Q1`…`Q4`, `OT`, `2OT` |
/// | `hockey/*` | `hockey` | `P1`…`P3`, `OT`, `SO` |
/// | `baseball/*` | `baseball` | innings |
///
/// Anything else (volleyball, racing, golf, tennis, mma, …) has no model in Matchcast's contract
/// and is refused with an error naming the sport and league.
public struct ESPNLeague: Sendable, Hashable, CustomStringConvertible {
    /// ESPN's sport segment: `soccer`, `basketball`, `football`, `hockey`, `baseball`, …
    public let sport: String
    /// ESPN's league segment: `eng.1`, `nba`, `college-football`, `all`, …
    public let league: String

    /// ESPN sport segments Matchcast can model.
    public static let supportedSports = ["soccer", "basketball", "football", "hockey", "baseball"]

    /// - Throws: `InputError` when either segment is empty or holds anything but `a-z 0-9 . _ -`.
    public init(sport: String, league: String) throws(InputError) {
        for (field, value) in [("sport", sport), ("league", league)] {
            guard !value.isEmpty, value.utf8.count <= 64, value.utf8.allSatisfy(Self.isSlugByte) else {
                throw InputError(
                    field: field, reason: "'\(value.prefix(64))' is not an ESPN \(field) (lower-case letters, digits, '.', '_', '-')")
            }
        }
        self.sport = sport
        self.league = league
    }

    /// Parses `soccer/eng.1`.
    public init(path: String) throws(InputError) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw InputError(field: "", reason: "'\(path.prefix(100))' is not {sport}/{league}, e.g. soccer/eng.1")
        }
        try self.init(sport: String(parts[0]), league: String(parts[1]))
    }

    /// `soccer/eng.1`.
    public var description: String { "\(sport)/\(league)" }

    /// The Matchcast sport, or nil when Matchcast has no model for this ESPN sport.
    public var matchcastSport: Sport? {
        switch sport {
        case "soccer": .football
        case "basketball": .basketball
        case "football": .americanFootball
        case "hockey": .hockey
        case "baseball": .baseball
        default: nil
        }
    }

    /// The Matchcast sport, or the refusal naming this sport and league.
    public func requireSport() throws(InputError) -> Sport {
        guard let sport = matchcastSport else {
            throw InputError(
                field: "",
                reason: "ESPN \(description): \(self.sport) is not a sport Matchcast models "
                    + "(supported: \(Self.supportedSports.joined(separator: ", ")))")
        }
        return sport
    }

    /// Regulation periods when the event does not say (`format.regulation.periods`).
    var defaultRegulationPeriods: Int {
        switch sport {
        case "soccer": 2
        case "hockey": 3
        case "baseball": 9
        case "basketball": league == "mens-college-basketball" ? 2 : 4
        default: 4
        }
    }

    /// `/apis/site/v2/sports/soccer/eng.1`
    var apiPrefix: String { "/apis/site/v2/sports/\(sport)/\(league)" }

    private static func isSlugByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}
