import AsyncHTTPClient
import Logging

extension FeedRouter {
    /// How a provider group is named among the feeds (`/readyz`, logs, metrics).
    public static let providerGroupName = "providers"

    /// The independent feeds of `specs`, then the provider group of `providers` (when any) serving canonical ids.
    public convenience init(
        specs: [FeedSpec], providers: [ProviderEntry], failover: FailoverSettings, client: HTTPClient?, clock: some Clock<Duration>,
        timeout: Duration = .seconds(10), logger: Logger = Logger(label: "matchcast.feeds")
    ) throws(FeedError) {
        var members: [Member] = []
        for spec in specs {
            members.append(Member(
                name: spec.publicName, idPrefix: spec.idPrefix, transport: try spec.makeTransport(client: client, clock: clock, timeout: timeout),
                listCarriesWholeMatches: spec.listCarriesWholeMatches))
        }
        if !providers.isEmpty {
            var built: [ProviderGroup.Provider] = []
            for entry in providers { built.append(try entry.makeProvider(client: client, clock: clock, timeout: timeout)) }
            members.append(Member(
                name: Self.providerGroupName, idPrefix: GameIdentity.idPrefix,
                transport: ProviderGroup(providers: built, settings: failover, logger: logger)))
        }
        guard !members.isEmpty else { throw .invalidConfiguration("no feed given: at least one is needed") }
        self.init(members: members)
    }

    /// The provider groups among the members.
    public var providerGroups: [ProviderGroup] {
        members.compactMap { $0.transport as? ProviderGroup }
    }
}
