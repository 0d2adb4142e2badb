import Hummingbird
import Prometheus

/// The API's own Prometheus series, in the registry the application is given (tests pass their own,
/// so none of them touches the process-wide `MetricsSystem`):
/// - `matchcast_http_requests_total{route, method, status}`
/// - `matchcast_http_request_duration_seconds{route, method}`
struct APIMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    private static var requests: MetricNameDescriptor { MetricNameDescriptor(
        namespace: "matchcast", subsystem: "http", metricName: "requests", unitName: "total",
        helpText: "HTTP requests answered, by route template, method and status.") }
    private static var duration: MetricNameDescriptor { MetricNameDescriptor(
        namespace: "matchcast", subsystem: "http", metricName: "request_duration", unitName: "seconds",
        helpText: "Time to answer an HTTP request, by route template and method.") }
    private static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
    ]
    /// Methods kept as their own label value; any other is `other`, so callers cannot grow the series.
    private static let knownMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .delete, .patch, .options]

    func record(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status, duration: Duration) {
        let method = Self.knownMethods.contains(method) ? method.rawValue : "other"
        registry.makeCounter(descriptor: Self.requests, labels: [
            ("route", route), ("method", method), ("status", String(status.code)),
        ]).increment()
        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("route", route), ("method", method)],
                                       buckets: Self.buckets).record(duration)
    }

    /// The whole registry in the Prometheus text exposition format 0.0.4.
    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

/// Counts every request by its route template (never the raw path: ids would explode the series);
/// requests that matched no route are `unmatched`.
struct APIMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: APIMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(request, context, response.status, since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            record(request, context, status, since: start)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, _ status: HTTPResponse.Status, since start: ContinuousClock.Instant) {
        // The router's not-found responder names its endpoint "NotFound".
        let route = context.endpointPath.flatMap { $0 == "NotFound" ? nil : $0 } ?? "unmatched"
        metrics.record(route: route, method: request.method, status: status, duration: ContinuousClock.now - start)
    }
}
