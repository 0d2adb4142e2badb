import Hummingbird
import MatchcastFeeds
import MatchcastService

/// Liveness, readiness and metrics: unauthenticated, for the orchestrator and the scraper.
extension APIRoutes {
    struct HealthBody: Encodable {
        var status: String
    }

    /// `Readiness` with its computed `ready`, which the synthesized encoding would leave out.
    struct ReadinessBody: Encodable {
        var store: Bool
        var feed: Bool
        var sinks: Bool
        /// Each feed by name, when there is more than one (with one, `feed` says it all).
        var feeds: [String: Bool]?
        /// Each provider of a failover group, when one is configured.
        var providers: [ProviderStatus]?
        var ready: Bool
    }

    /// `GET /healthz`: the process answers.
    func health(_ request: Request, _ context: APIRequestContext) throws -> Response {
        try json(HealthBody(status: "ok"), request, context)
    }

    /// `GET /readyz`: 200 when the store and every feed are reachable, else 503; the body says which (each feed by
    /// name when there are several), and whether every sink reaches its destination (reported, not required).
    func readiness(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let readiness = await service.readiness()
        let body = ReadinessBody(
            store: readiness.store, feed: readiness.feed, sinks: readiness.sinks,
            feeds: readiness.feeds.count > 1 ? readiness.feeds : nil,
            providers: readiness.providers.isEmpty ? nil : readiness.providers, ready: readiness.ready)
        return try json(body, status: readiness.ready ? .ok : .serviceUnavailable, request, context)
    }

    /// `GET /metrics`: the registry in the Prometheus text format.
    func metricsExposition() -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition()))
        )
    }
}
