import Hummingbird
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
        try auth.admin(request)
        let body = try await body(FeedbackBody.self, request, context)
        let invalidated = try await service.reportDeadToken(body.token, reason: body.reason)
        return try json(FeedbackResult(invalidated: invalidated), request, context)
    }
}
