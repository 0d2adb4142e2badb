import Hummingbird
import MatchcastService
import MatchcastCore

/// `/v1/activities`: update tokens of activities, and their dismissal.
extension APIRoutes {
    struct ActivityBody: Decodable {
        var deviceId: String
        var matchId: String
        var updateToken: String
        var environment: APNsEnvironment?
    }

    /// `PUT /v1/activities/{activityId}`: adopt an activity or rotate its update token; 200.
    func putActivity(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let activityId = try parameter("activityId", context)
        // Authenticate before reading the body, so a stranger learns nothing from validation errors.
        let deviceId = try await auth.device(request)
        let body = try await body(ActivityBody.self, request, context)
        guard body.deviceId == deviceId else {
            throw APIError.forbidden("field 'deviceId': not the authenticated device")
        }
        let activity = try await service.putActivity(
            activityId: activityId, deviceId: deviceId, matchId: body.matchId,
            updateToken: body.updateToken, environment: body.environment)
        return try json(activity, request, context)
    }

    /// `DELETE /v1/activities/{activityId}`: the user dismissed it; the service checks ownership; 204.
    func deleteActivity(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let activityId = try parameter("activityId", context)
        let deviceId = try await auth.device(request)
        try await service.deleteActivity(activityId: activityId, deviceId: deviceId)
        return Response(status: .noContent)
    }
}
