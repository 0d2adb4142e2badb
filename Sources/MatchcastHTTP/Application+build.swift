import Hummingbird
import Logging
import MatchcastService
import Prometheus
import ServiceLifecycle

/// The API server: the router below, listening where `configuration` says, running `services`
/// (the broker's pollers and dispatchers) in the same service group so they shut down together.
public func buildApplication(
    service: LiveActivityService,
    configuration: APIConfiguration,
    registry: PrometheusCollectorRegistry,
    services: [any Service] = [],
    logger: Logger
) -> some ApplicationProtocol {
    let router = buildRouter(service: service, configuration: configuration, registry: registry)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "matchcast"),
        services: services,
        logger: logger
    )
}

/// Every call of `APIRoute.all` behind the API's middleware: metrics outermost (it sees every
/// status), then errors (everything becomes the JSON error shape), then the body size limit.
public func buildRouter(
    service: LiveActivityService,
    configuration: APIConfiguration,
    registry: PrometheusCollectorRegistry
) -> Router<APIRequestContext> {
    let metrics = APIMetrics(registry: registry)
    let router = Router(context: APIRequestContext.self)
    // Middleware applies only to routes added after it.
    router.add(middleware: APIMetricsMiddleware(metrics: metrics))
    router.add(middleware: APIErrorMiddleware())
    router.add(middleware: BodyLimitMiddleware(maxBytes: configuration.maxBodyBytes))
    router.add(middleware: CallerWaitsMiddleware())
    let routes = APIRoutes(
        service: service,
        auth: APIAuthenticator(service: service, adminKey: configuration.adminKey, appAdminKeys: configuration.appAdminKeys),
        metrics: metrics
    )
    routes.register(on: router)
    return router
}
