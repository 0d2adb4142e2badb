import Hummingbird

/// One call of the API: method, path template (OpenAPI syntax, `{deviceId}`) and OpenAPI operation id.
///
/// `APIRoute.all` is the single list the router is built from and `ops/openapi.yaml` is checked against.
public struct APIRoute: Sendable, Hashable, CustomStringConvertible {
    /// What the call does; one handler each (`APIRoutes.handler(for:)` switches over all of them).
    enum Operation: String, CaseIterable, Sendable {
        case registerDevice
        case putPushToStartToken
        case putFCMToken
        case putWebPushSubscription
        case followMatch
        case unfollowMatch
        case listFollows
        case deviceDiagnostics
        case putActivity
        case deleteActivity
        case listMatches
        case getMatch
        case reportDeadToken
        case listDeadLetters
        case adminDeviceDiagnostics
        case health
        case readiness
        case metrics
    }

    public let method: HTTPRequest.Method
    public let path: String
    let operation: Operation

    /// The OpenAPI `operationId` of the call.
    public var operationId: String { operation.rawValue }

    public var description: String { "\(method.rawValue) \(path)" }

    init(_ method: HTTPRequest.Method, _ path: String, _ operation: Operation) {
        self.method = method
        self.path = path
        self.operation = operation
    }

    /// Every call the API answers, in the order of docs/formats.md, "HTTP API".
    public static let all: [APIRoute] = [
        APIRoute(.post, "/v1/devices", .registerDevice),
        APIRoute(.put, "/v1/devices/{deviceId}/push-to-start-token", .putPushToStartToken),
        APIRoute(.put, "/v1/devices/{deviceId}/fcm-token", .putFCMToken),
        APIRoute(.put, "/v1/devices/{deviceId}/webpush-subscription", .putWebPushSubscription),
        APIRoute(.put, "/v1/devices/{deviceId}/follows/{matchId}", .followMatch),
        APIRoute(.delete, "/v1/devices/{deviceId}/follows/{matchId}", .unfollowMatch),
        APIRoute(.get, "/v1/devices/{deviceId}/follows", .listFollows),
        APIRoute(.get, "/v1/devices/{deviceId}/diagnostics", .deviceDiagnostics),
        APIRoute(.put, "/v1/activities/{activityId}", .putActivity),
        APIRoute(.delete, "/v1/activities/{activityId}", .deleteActivity),
        APIRoute(.get, "/v1/matches", .listMatches),
        APIRoute(.get, "/v1/matches/{id}", .getMatch),
        APIRoute(.post, "/v1/feedback", .reportDeadToken),
        APIRoute(.get, "/v1/admin/dead-letters", .listDeadLetters),
        APIRoute(.get, "/v1/admin/devices/{deviceId}/diagnostics", .adminDeviceDiagnostics),
        APIRoute(.get, "/healthz", .health),
        APIRoute(.get, "/readyz", .readiness),
        APIRoute(.get, "/metrics", .metrics),
    ]

    /// Whether a request path fits this template: same segments, a `{parameter}` fitting any one.
    func matches(path requestPath: String) -> Bool {
        let template = path.split(separator: "/")
        let segments = requestPath.split(separator: "/")
        guard template.count == segments.count else { return false }
        return zip(template, segments).allSatisfy { pattern, segment in
            pattern.first == "{" || pattern == segment
        }
    }

    /// The methods the API answers at a request path: non-empty means a wrong method is 405, not 404.
    static func allowedMethods(at requestPath: String) -> [HTTPRequest.Method] {
        all.filter { $0.matches(path: requestPath) }.map(\.method)
    }
}
