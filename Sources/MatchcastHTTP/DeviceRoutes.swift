import Foundation
import Hummingbird
import MatchcastService
import MatchcastCore

/// `/v1/devices`: registration, the push-to-start token (iOS), the FCM token (Android), the Web Push subscription
/// (browsers), and follows.
extension APIRoutes {
    struct PushToStartTokenBody: Decodable {
        var token: String
        var environment: APNsEnvironment
    }

    struct FCMTokenBody: Decodable {
        var token: String
    }

    struct FollowsBody: Encodable {
        var follows: [FollowView]
    }

    struct RegisterBody: Decodable {
        /// The app the install belongs to (docs/apps.md); absent: the default app.
        var app: String?
    }

    /// `POST /v1/devices`, with no body or `{"app": "<app id>"}`: 201 with the device id and secret, which is never
    /// shown again.
    func registerDevice(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let raw = try await rawBody(request, context)
        let app = raw.readableBytes == 0 ? nil : try APIRequestDecoder.decode(RegisterBody.self, from: Data(raw.readableBytesView)).app
        let registration = try await service.registerDevice(app: app)
        var response = try json(registration, status: .created, request, context)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// `PUT /v1/devices/{deviceId}/push-to-start-token`: replaces the previous token; 204.
    func putPushToStartToken(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        let body = try await body(PushToStartTokenBody.self, request, context)
        try await service.setPushToStartToken(deviceId: deviceId, token: body.token, environment: body.environment)
        return Response(status: .noContent)
    }

    /// `PUT /v1/devices/{deviceId}/fcm-token`: `{"token": "<FCM registration token>"}`; replaces the device's
    /// address; 204.
    func putFCMToken(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        let body = try await body(FCMTokenBody.self, request, context)
        try await service.setFCMToken(deviceId: deviceId, token: body.token)
        return Response(status: .noContent)
    }

    /// `PUT /v1/devices/{deviceId}/webpush-subscription`: the browser's `PushSubscription.toJSON()`; replaces the
    /// device's address; 204.
    func putWebPushSubscription(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        let json = try await rawBody(request, context)
        try await service.setWebPushSubscription(deviceId: deviceId, json: json.readableBytesView)
        return Response(status: .noContent)
    }

    /// `PUT /v1/devices/{deviceId}/follows/{matchId}`: idempotent; 200 with the follow.
    func followMatch(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        let follow = try await service.follow(deviceId: deviceId, matchId: parameter("matchId", context))
        return try json(follow, request, context)
    }

    /// `DELETE /v1/devices/{deviceId}/follows/{matchId}`: unfollows and ends the activity; 204.
    func unfollowMatch(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        try await service.unfollow(deviceId: deviceId, matchId: parameter("matchId", context))
        return Response(status: .noContent)
    }

    /// `GET /v1/devices/{deviceId}/follows`: `{"follows": [...]}` for the app to sync.
    func listFollows(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        let follows = try await service.follows(deviceId: deviceId)
        return try json(FollowsBody(follows: follows), request, context)
    }

    /// `GET /v1/devices/{deviceId}/diagnostics`: where the device's tokens and activities stand, and what needs attention.
    func deviceDiagnostics(_ request: Request, _ context: APIRequestContext) async throws -> Response {
        let deviceId = try await auth.device(request, owning: parameter("deviceId", context))
        return try json(try await service.diagnostics(deviceId: deviceId), request, context)
    }
}
