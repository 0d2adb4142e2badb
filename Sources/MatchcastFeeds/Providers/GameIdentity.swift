import Foundation
import MatchcastCore

/// A game's identity across providers: its sport, its day (in the group's time zone), and its home and away teams
/// with their names normalised, so that `espn:401547417` and `nhl:2024030121` are one game.
///
/// A name is normalised by folding case and accents, keeping letters and digits, dropping the words that some
/// providers add and others do not (`FC`, `AFC`, `CF`, `SC`, `the`), and then mapping it through the configured
/// aliases (`man utd` → `manchester united`), whose sides are normalised the same way.
public struct GameIdentity: Sendable {
    /// The day a game is on: its start in this time zone (a league's own zone keeps evening games on their day).
    public let timeZone: TimeZone
    /// Normalised alias → normalised name.
    public let aliases: [String: String]

    /// Canonical ids start with this, so that the router can tell them from any provider's.
    public static let idPrefix = "game:"
    /// How long a slug of a team may be, so that an id stays within the 128 bytes a match id may have.
    static let slugLimit = 40
    private static let noise: Set<String> = ["fc", "afc", "cf", "sc", "the"]

    /// - Parameter aliases: alias → name, as configured (`"man utd": "manchester united"`).
    public init(timeZone: TimeZone = TimeZone(identifier: "UTC")!, aliases: [String: String] = [:]) {
        self.timeZone = timeZone
        var normalised: [String: String] = [:]
        for (alias, name) in aliases {
            normalised[Self.words(alias).joined(separator: "-")] = Self.words(name).joined(separator: "-")
        }
        self.aliases = normalised
    }

    /// What identifies a game but for a second game of the same teams on the same day (a doubleheader).
    public struct Key: Sendable, Hashable {
        public var sport: Sport
        public var day: String
        public var home: String
        public var away: String
    }

    /// The game `snapshot` is of; `day` when it has no start time (a live list's entry without one).
    public func key(of snapshot: MatchSnapshot, fallbackDay: String) -> Key {
        Key(
            sport: snapshot.sport, day: snapshot.startsAt.map(day(of:)) ?? fallbackDay,
            home: slug(snapshot.home.name), away: slug(snapshot.away.name))
    }

    /// `game:hockey:2025-01-14:toronto-maple-leafs-v-boston-bruins`, and `…:2` for the second game of the day.
    public func id(of key: Key, number: Int) -> String {
        let base = "\(Self.idPrefix)\(key.sport.rawValue):\(key.day):\(key.home)-v-\(key.away)"
        return number > 1 ? base + ":\(number)" : base
    }

    /// The day a canonical id names, to look its game up in the providers' schedules.
    public static func day(inId id: String) -> String? {
        guard id.hasPrefix(idPrefix) else { return nil }
        let parts = id.dropFirst(idPrefix.count).split(separator: ":")
        guard parts.count >= 3, FeedRequest.isCalendarDate(String(parts[1])) else { return nil }
        return String(parts[1])
    }

    /// `YYYY-MM-DD` of `date` in `timeZone`.
    public func day(of date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        let (year, month, day) = (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    /// A team's name as ids carry it: normalised words joined by `-`, through the aliases.
    public func slug(_ name: String) -> String {
        var words = Self.words(name)
        let meaningful = words.filter { !Self.noise.contains($0) }
        if !meaningful.isEmpty { words = meaningful }
        let joined = words.joined(separator: "-")
        let named = aliases[joined] ?? joined
        return named.isEmpty ? "team" : String(named.prefix(Self.slugLimit))
    }

    /// Lower-case words of letters and digits, accents folded (`"Atlético  Madrid"` → `["atletico", "madrid"]`).
    static func words(_ text: String) -> [String] {
        let folded = MatchSearch.fold(text).replacingOccurrences(of: "&", with: " and ")
        var words: [String] = []
        var current = ""
        for scalar in folded.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                current.unicodeScalars.append(scalar)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
