import Foundation
import Hummingbird
import MatchcastCore
import MatchcastService

/// Calls made by the operator or a downstream push service, with the admin key.
extension APIRoutes {
    struct FeedbackBody: Decodable {
        var token: String
        var reason: String
    }

    struct FeedbackResult: Encodable {
        /// Whether the token belonged to something the broker now stopped pushing to.
        var invalidated: Bool
    }

    /// `POST /v1/feedback`: a dead token reported downstream; `{"invalidated": Bool}`.
    func reportDeadToken(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let scope = try auth.admin(request)
        let body = try await body(FeedbackBody.self, request, context)
        let invalidated = try await service.reportDeadToken(body.token, reason: body.reason, app: scope.appId)
        return try json(FeedbackResult(invalidated: invalidated), request, context)
    }

    struct DeadLettersBody: Encodable {
        struct Letter: Encodable {
            var sink: String
            var status: Int
            var reason: String
            var recordedAt: Date
            var delivery: DeliveryRecord
        }

        var deadLetters: [Letter]
    }

    /// `GET /v1/admin/dead-letters?limit=N` (1 ... 1000, default 100): refused deliveries, newest first.
    func listDeadLetters(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let scope = try auth.admin(request)
        var limit = 100
        if let raw = request.uri.queryParameters["limit"] {
            guard let value = Int(raw) else { throw APIError.invalidRequest("limit must be a whole number, got '\(raw.prefix(20))'") }
            limit = value
        }
        let letters = try await service.deadLetters(limit: limit, app: scope.appId)
        let body = DeadLettersBody(deadLetters: letters.map {
            .init(sink: $0.sink, status: $0.status, reason: $0.reason, recordedAt: $0.recordedAt,
                  delivery: DeliveryRecord($0.delivery))
        })
        return try json(body, request, context)
    }

    /// `GET /v1/admin/devices/{deviceId}/diagnostics`: the device's diagnostics, for the operator.
    func adminDeviceDiagnostics(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let scope = try auth.admin(request)
        return try json(try await service.diagnostics(deviceId: parameter("deviceId", context), app: scope.appId), request, context)
    }
}
