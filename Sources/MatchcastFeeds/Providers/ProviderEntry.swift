import AsyncHTTPClient
import Foundation

/// One provider of a failover group as configured: a feed spec and its options, `;`-separated:
/// `espn:hockey/nhl;tier=unofficial;budget=10/min;competitions=NHL|Stanley Cup`.
///
/// - `tier`: `official`, `unofficial` (the default) or `scraped`;
/// - `budget`: at most N requests per second, minute or hour (`N/s`, `N/min`, `N/h`);
/// - `competitions`: `|`-separated names; the provider serves only matches whose competition contains one;
/// - `baseURL`: the provider at another base (a proxy, a cache, a test server), as `@BASE` would say.
public struct ProviderEntry: Sendable, Hashable {
    public var spec: FeedSpec
    public var tier: ProviderTier
    public var budget: String?
    public var competitions: [String]

    public init(spec: FeedSpec, tier: ProviderTier = .unofficial, budget: String? = nil, competitions: [String] = []) {
        self.spec = spec
        self.tier = tier
        self.budget = budget
        self.competitions = competitions
    }

    public init(parsing text: String) throws(FeedError) {
        let parts = text.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = parts.first, !first.isEmpty else { throw .invalidConfiguration("an empty provider entry") }
        self.init(spec: try FeedSpec(parsing: first))
        let quoted = "provider '\(spec.publicName)'"
        for option in parts.dropFirst() where !option.isEmpty {
            let pair = option.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch (pair.first, pair.count == 2 ? pair[1] : nil) {
            case ("tier", let value?):
                guard let tier = ProviderTier(rawValue: value.lowercased()) else {
                    throw .invalidConfiguration("\(quoted): tier '\(value.prefix(40))' is not official, unofficial or scraped")
                }
                self.tier = tier
            case ("budget", let value?):
                do {
                    _ = try RequestBudget(parsing: value)
                } catch {
                    throw .invalidConfiguration("\(quoted): \(error)")
                }
                budget = value
            case ("baseURL", let value?):
                do {
                    spec = try spec.withBaseURL(value)
                } catch {
                    throw .invalidConfiguration("\(quoted): \(error)")
                }
            case ("competitions", let value?):
                competitions = value.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            default:
                throw .invalidConfiguration("\(quoted): unknown option '\(option.prefix(60))' (tier=, budget=, competitions=, baseURL=)")
            }
        }
    }

    /// Several, comma-separated (a YAML list, `--provider` given more than once); none twice.
    public static func list(parsing text: String) throws(FeedError) -> [ProviderEntry] {
        var entries: [ProviderEntry] = []
        for part in text.split(separator: ",") where !part.trimmingCharacters(in: .whitespaces).isEmpty {
            let entry = try ProviderEntry(parsing: String(part))
            guard !entries.contains(where: { $0.spec == entry.spec }) else {
                throw .invalidConfiguration("provider '\(entry.spec.publicName)' is given twice")
            }
            entries.append(entry)
        }
        return entries
    }

    /// The provider, its transport built as `FeedSpec.makeTransport` builds a feed's.
    public func makeProvider(
        client: HTTPClient?, clock: some Clock<Duration>, timeout: Duration = .seconds(10)
    ) throws(FeedError) -> ProviderGroup.Provider {
        var parsedBudget: RequestBudget?
        if let budget { parsedBudget = try RequestBudget(parsing: budget) }
        return ProviderGroup.Provider(
            name: spec.publicName, tier: tier, transport: try spec.makeTransport(client: client, clock: clock, timeout: timeout), budget: parsedBudget,
            competitions: competitions)
    }
}
