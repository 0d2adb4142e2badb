import Hummingbird
import MatchcastService

/// `/v1/matches`: matches as the broker sees them; open to any device and to the operator.
extension APIRoutes {
    struct MatchesBody: Encodable {
        var matches: [MatchView]
    }

    /// `GET /v1/matches`: `{"matches": [...]}`.
    func listMatches(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        try await auth.deviceOrAdmin(request)
        return try json(MatchesBody(matches: try await service.matches()), request, context)
    }

    /// `GET /v1/matches/{id}`: one match, 404 when the broker has not seen it.
    func getMatch(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        try await auth.deviceOrAdmin(request)
        let match = try await service.match(id: parameter("id", context))
        return try json(match, request, context)
    }
}
