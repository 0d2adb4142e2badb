import AsyncHTTPClient
import Foundation
import MatchcastCore

/// Which feed to poll, as given on the command line or in the config:
/// `fake`, `fake?speed=600&seed=7` (or `fake:speed=600`), `mlb`, `mlb:BASE`, `nhl`, `nhl@BASE`,
/// `espn:{sport}/{league}[@BASE]` (`espn:soccer/eng.1`), or a native v1 base URL.
public enum FeedSpec: Sendable, Hashable, CustomStringConvertible {
    case fake(speed: Double, seed: UInt64)
    case native(baseURL: String)
    case mlb(baseURL: String)
    /// One ESPN site-API league (see `ESPNFeedTransport`); `baseURL` overrides ESPN's for tests and proxies.
    case espn(sport: String, league: String, baseURL: String)
    /// The NHL api-web through `NHLFeedTransport`; `nhl@BASE` points it at a proxy or a test server.
    case nhl(baseURL: String)

    /// The MLB Stats API's public base.
    public static let mlbDefaultBase = "https://statsapi.mlb.com"
    /// The ESPN site API's public base.
    public static let espnDefaultBase = ESPNFeedTransport.defaultBaseURL

    public init(parsing text: String) throws(FeedError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "fake" || trimmed.hasPrefix("fake?") || trimmed.hasPrefix("fake:") {
            var speed = 1.0
            var seed: UInt64 = 1
            let query = trimmed.dropFirst(4).drop { $0 == "?" || $0 == ":" }
            for pair in query.split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                switch (parts.first, parts.count == 2 ? parts[1] : nil) {
                case ("speed", let value?):
                    guard let parsed = Double(value), parsed > 0, parsed <= 100_000 else {
                        throw .invalidConfiguration("feed '\(text)': speed must be a number in (0, 100000]")
                    }
                    speed = parsed
                case ("seed", let value?):
                    guard let parsed = UInt64(value) else {
                        throw .invalidConfiguration("feed '\(text)': seed must be a whole number")
                    }
                    seed = parsed
                default:
                    throw .invalidConfiguration("feed '\(text)': unknown option '\(pair)' (speed=N, seed=S)")
                }
            }
            self = .fake(speed: speed, seed: seed)
        } else if trimmed == "mlb" {
            self = .mlb(baseURL: Self.mlbDefaultBase)
        } else if trimmed.hasPrefix("mlb:") {
            self = .mlb(baseURL: String(trimmed.dropFirst(4)))
        } else if trimmed == "espn" || trimmed.hasPrefix("espn:") {
            self = try Self.parseESPN(String(trimmed.dropFirst(5)), text: text)
        } else if trimmed == "nhl" || trimmed.hasPrefix("nhl@") {
            let base = trimmed == "nhl" ? NHLFeedTransport.defaultBaseURL : String(trimmed.dropFirst(4))
            guard base.hasPrefix("http://") || base.hasPrefix("https://") else {
                throw .invalidConfiguration("feed '\(text.prefix(200))': nhl@BASE needs a http(s) base URL after the @")
            }
            self = .nhl(baseURL: base)
        } else if trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") {
            self = .native(baseURL: trimmed)
        } else {
            throw .invalidConfiguration(
                "feed '\(text.prefix(200))' is not one of: a http(s) base URL, fake[?speed=N&seed=S], mlb, mlb:BASE, "
                    + "nhl, nhl@BASE, espn:{sport}/{league}[@BASE]")
        }
    }

    /// `soccer/eng.1` or `football/nfl@http://localhost:8080`, the part after `espn:`.
    private static func parseESPN(_ rest: String, text: String) throws(FeedError) -> FeedSpec {
        let quoted = "feed '\(text.prefix(200))'"
        let parts = rest.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? ""
        var base = espnDefaultBase
        if parts.count == 2 {
            base = String(parts[1])
            guard base.hasPrefix("http://") || base.hasPrefix("https://"), base.count > "https://".count else {
                throw .invalidConfiguration("\(quoted): the base after '@' must be an http(s) URL, e.g. espn:soccer/eng.1@http://localhost:8080")
            }
        }
        let league: ESPNLeague
        do {
            league = try ESPNLeague(path: path)
        } catch {
            throw .invalidConfiguration("\(quoted): expected espn:{sport}/{league}[@BASE], e.g. espn:soccer/eng.1 (\(error))")
        }
        do {
            _ = try league.requireSport()
        } catch {
            throw .invalidConfiguration("\(quoted): \(error.reason)")
        }
        return .espn(sport: league.sport, league: league.league, baseURL: base)
    }

    /// This feed at another base URL (a proxy, a cache, a test server): what `@BASE`, `mlb:BASE` or a native URL say.
    public func withBaseURL(_ base: String) throws(FeedError) -> FeedSpec {
        let trimmed = base.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://"), trimmed.count > "https://".count else {
            throw .invalidConfiguration("base URL '\(base.prefix(200))' is not an http(s) URL")
        }
        switch self {
        case .fake: throw .invalidConfiguration("the fake feed has no base URL")
        case .native: return .native(baseURL: trimmed)
        case .mlb: return .mlb(baseURL: trimmed)
        case .espn(let sport, let league, _): return .espn(sport: sport, league: league, baseURL: trimmed)
        case .nhl: return .nhl(baseURL: trimmed)
        }
    }

    public var description: String {
        switch self {
        case .fake(let speed, let seed): "fake?speed=\(speed)&seed=\(seed)"
        case .native(let base): base
        case .mlb(let base): "mlb:\(base)"
        case .espn(let sport, let league, let base):
            base == Self.espnDefaultBase ? "espn:\(sport)/\(league)" : "espn:\(sport)/\(league)@\(base)"
        case .nhl(let base): "nhl@\(base)"
        }
    }

    /// Several feeds, as `--feed` given more than once or the config's `feed` list (comma-separated in one text): each
    /// parsed as above, none twice. A base URL with a comma in it writes it as `%2C`.
    public static func list(parsing text: String) throws(FeedError) -> [FeedSpec] {
        var specs: [FeedSpec] = []
        for part in text.split(separator: ",") {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            let spec = try FeedSpec(parsing: trimmed)
            // The same feed twice would poll every match of it twice.
            guard !specs.contains(spec) else { throw .invalidConfiguration("feed '\(spec.publicName)' is given twice") }
            specs.append(spec)
        }
        guard !specs.isEmpty else { throw .invalidConfiguration("no feed given: at least one is needed") }
        return specs
    }

    /// The prefix of the match ids this feed serves (`mlb:`, `nhl:`, `espn:`); nil for a native or the fake feed,
    /// whose ids carry none.
    public var idPrefix: String? {
        switch self {
        case .fake, .native: nil
        case .mlb: MLBFeedTransport.idPrefix
        case .nhl: NHLFeedTransport.idPrefix
        case .espn: ESPNFeedTransport.idPrefix
        }
    }

    /// The feed's name in logs, `/readyz` and metrics: `description` without a base URL's user, password and query,
    /// which may carry credentials.
    public var publicName: String {
        switch self {
        case .fake: "fake"
        case .native(let base): Self.withoutSecrets(base)
        case .mlb(let base): base == Self.mlbDefaultBase ? "mlb" : "mlb:" + Self.withoutSecrets(base)
        case .espn(let sport, let league, let base):
            base == Self.espnDefaultBase ? "espn:\(sport)/\(league)" : "espn:\(sport)/\(league)@" + Self.withoutSecrets(base)
        case .nhl(let base): base == NHLFeedTransport.defaultBaseURL ? "nhl" : "nhl@" + Self.withoutSecrets(base)
        }
    }

    /// `https://user:secret@host:8443/v1?key=k` → `https://host:8443/v1`.
    private static func withoutSecrets(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return String(url.prefix(while: { $0 != "?" && $0 != "@" })) }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? url
    }

    /// Whether the feed's live list carries each match whole, as its `/matches/{id}` would answer (docs/formats.md,
    /// "Feed (native v1)": both are `MatchSnapshot`s): a native or the fake feed. ESPN's and NHL's match answers add the
    /// summary's or the play-by-play's detail to what their lists carry; MLB has no list.
    public var listCarriesWholeMatches: Bool {
        switch self {
        case .fake, .native: true
        case .mlb, .espn, .nhl: false
        }
    }

    /// Whether polling this feed needs the process-wide `HTTPClient`.
    public var needsHTTPClient: Bool {
        if case .fake = self { return false }
        return true
    }

    /// A transport for this feed. `client` must be given for HTTP feeds, each request of which waits at most `timeout`;
    /// the fake feed runs on `clock`.
    public func makeTransport(
        client: HTTPClient?, clock: some Clock<Duration>, timeout: Duration = .seconds(10)
    ) throws(FeedError) -> any FeedTransport {
        switch self {
        case .fake(let speed, let seed):
            let feed: FakeFeed
            do {
                feed = try FakeFeed(seed: seed, speed: speed)
            } catch {
                throw .invalidConfiguration("fake feed: \(error)")
            }
            return FakeFeedTransport(feed: feed, clock: clock)
        case .native(let base):
            guard let client else { throw .invalidConfiguration("feed \(base) needs an HTTP client") }
            return try HTTPFeedTransport(client: client, baseURL: base, timeout: timeout)
        case .mlb(let base):
            guard let client else { throw .invalidConfiguration("feed mlb needs an HTTP client") }
            return MLBFeedTransport(upstream: try HTTPFeedTransport(client: client, baseURL: base, timeout: timeout), diffPatch: true)
        case .espn(let sport, let league, let base):
            guard let client else { throw .invalidConfiguration("feed espn needs an HTTP client") }
            let parsed: ESPNLeague
            do {
                parsed = try ESPNLeague(sport: sport, league: league)
            } catch {
                throw .invalidConfiguration("feed espn:\(sport.prefix(64))/\(league.prefix(64)): \(error)")
            }
            return ESPNFeedTransport(
                league: parsed, upstream: try HTTPFeedTransport(client: client, baseURL: base, timeout: timeout),
                uptime: ESPNFeedTransport.uptime(on: clock))
        case .nhl(let base):
            guard let client else { throw .invalidConfiguration("feed nhl needs an HTTP client") }
            return NHLFeedTransport(upstream: try HTTPFeedTransport(client: client, baseURL: base, timeout: timeout))
        }
    }
}
