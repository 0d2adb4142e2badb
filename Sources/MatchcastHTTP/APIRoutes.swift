import Foundation
import Hummingbird
import MatchcastService

/// The handlers of every call in `APIRoute.all`, bound to the service they call.
///
/// Each group lives in its own file (`DeviceRoutes`, `ActivityRoutes`, `MatchRoutes`, `AdminRoutes`,
/// `HealthRoutes`); this one registers them from the route table, so a call cannot be routed
/// without being listed, nor listed without a handler.
struct APIRoutes: Sendable {
    typealias Handler = @Sendable (Request, APIRequestContext) async throws -> Response

    let service: LiveActivityService
    let auth: APIAuthenticator
    let metrics: APIMetrics

    func register(on router: Router<APIRequestContext>) {
        for route in APIRoute.all {
            router.on(RouterPath(route.path), method: route.method, use: handler(for: route.operation))
        }
    }

    func handler(for operation: APIRoute.Operation) -> Handler {
        switch operation {
        case .registerDevice: return { try await registerDevice($0, $1) }
        case .putPushToStartToken: return { try await putPushToStartToken($0, $1) }
        case .putFCMToken: return { try await putFCMToken($0, $1) }
        case .putWebPushSubscription: return { try await putWebPushSubscription($0, $1) }
        case .followMatch: return { try await followMatch($0, $1) }
        case .unfollowMatch: return { try await unfollowMatch($0, $1) }
        case .listFollows: return { try await listFollows($0, $1) }
        case .deviceDiagnostics: return { try await deviceDiagnostics($0, $1) }
        case .putActivity: return { try await putActivity($0, $1) }
        case .deleteActivity: return { try await deleteActivity($0, $1) }
        case .listMatches: return { try await listMatches($0, $1) }
        case .getMatch: return { try await getMatch($0, $1) }
        case .reportDeadToken: return { try await reportDeadToken($0, $1) }
        case .listDeadLetters: return { try await listDeadLetters($0, $1) }
        case .adminDeviceDiagnostics: return { try await adminDeviceDiagnostics($0, $1) }
        case .health: return { try health($0, $1) }
        case .readiness: return { try await readiness($0, $1) }
        case .metrics: return { _, _ in metricsExposition() }
        }
    }
}

// MARK: Helpers shared by the groups

extension APIRoutes {
    /// A path parameter the route template declares, percent-decoded (`ipl%3Am41` is `ipl:m41`).
    func parameter(_ name: String, _ context: APIRequestContext) throws(APIError) -> String {
        guard let raw = context.parameters.get(name) else {
            throw .invalidRequest("path parameter '\(name)' is missing")
        }
        return Self.percentDecoded(raw)
    }

    /// `raw` with its escapes decoded; an invalid escape leaves it as sent (the service refuses the `%` as not an
    /// identifier). Most ids carry no `%`: those come back as they are, without Foundation's decoding, which goes
    /// through `NSString` (docs/performance.md, "Where the time goes").
    static func percentDecoded(_ raw: String) -> String {
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        return raw.removingPercentEncoding ?? raw
    }

    /// The request body as `T`, or 400 naming the field at fault.
    func body<T: Decodable>(_ type: T.Type, _ request: Request, _ context: APIRequestContext) async throws -> T {
        try await context.requestDecoder.decode(type, from: request, context: context)
    }

    /// The request's body as sent, for a call that checks it as a whole (a Web Push subscription).
    func rawBody(_ request: Request, _ context: APIRequestContext) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: context.maxUploadSize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError.contentTooLarge(limit: context.maxUploadSize)
        }
    }

    /// `value` as a JSON response with `status`.
    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, _ request: Request, _ context: APIRequestContext) throws -> Response {
        var response = try context.responseEncoder.encode(value, from: request, context: context)
        response.status = status
        return response
    }
}
