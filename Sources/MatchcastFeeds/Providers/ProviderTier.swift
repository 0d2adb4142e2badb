/// How much a provider's data is trusted, best first: the poller uses the best healthy provider of a match.
public enum ProviderTier: String, Sendable, Hashable, CaseIterable, Comparable {
    /// The league's or the rights holder's own feed.
    case official
    /// A public but undocumented API (ESPN's site API, the NHL's api-web).
    case unofficial
    /// Scraped from pages meant for people.
    case scraped

    private var rank: Int {
        switch self {
        case .official: 0
        case .unofficial: 1
        case .scraped: 2
        }
    }

    public static func < (lhs: ProviderTier, rhs: ProviderTier) -> Bool { lhs.rank < rhs.rank }
}
