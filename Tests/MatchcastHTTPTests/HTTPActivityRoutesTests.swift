import Foundation
import Hummingbird
import HummingbirdTesting
import MatchcastHTTP
import MatchcastService
import Testing

@Suite("HTTP API: activities")
struct HTTPActivityRoutesTests {
    private static func activityBody(deviceId: String, token: String = HTTPHarness.tokenA, environment: String? = nil) -> String {
        let env = environment.map { #", "environment": "\#($0)""# } ?? ""
        return #"{"deviceId": "\#(deviceId)", "matchId": "epl-mun-liv", "updateToken": "\#(token)"\#(env)}"#
    }

    @Test("PUT /v1/activities/{id} adopts an activity: 200 with the ActivityView")
    func putActivity() async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            let response = try await client.call(
                .put, "/v1/activities/act_app_1", bearer: device.deviceSecret,
                json: Self.activityBody(deviceId: device.deviceId, environment: "sandbox"))
            #expect(response.status == .ok)
            #expect(response.isJSON)
            let activity = try response.decode(ActivityView.self)
            #expect(activity.activityId == "act_app_1")
            #expect(activity.deviceId == device.deviceId)
            #expect(activity.matchId == "epl-mun-liv")
            // Rotating the token of the same activity is fine too.
            let rotated = try await client.call(
                .put, "/v1/activities/act_app_1", bearer: device.deviceSecret,
                json: Self.activityBody(deviceId: device.deviceId, token: HTTPHarness.tokenB))
            #expect(rotated.status == .ok)
            // Adopting implies following.
            let follows = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows", bearer: device.deviceSecret)
            #expect(follows.text.contains(#""matchId":"epl-mun-liv""#))
        }
    }

    @Test("PUT activity naming another device in the body is 403; bad fields are 400 naming them")
    func putActivityRefusals() async throws {
        try await HTTPHarness().run { client in
            let mine = try await client.register()
            let theirs = try await client.register()
            let forbidden = try await client.call(
                .put, "/v1/activities/act_1", bearer: mine.deviceSecret, json: Self.activityBody(deviceId: theirs.deviceId))
            #expect(forbidden.status == .forbidden)
            #expect(forbidden.apiError?.code == "forbidden")

            let cases: [(String, String)] = [
                (Self.activityBody(deviceId: mine.deviceId, token: "nothex"), "updateToken"),
                (#"{"deviceId": "\#(mine.deviceId)", "updateToken": "\#(HTTPHarness.tokenA)"}"#, "field 'matchId': missing"),
                (#"{"deviceId": "\#(mine.deviceId)", "matchId": "m1"}"#, "field 'updateToken': missing"),
                (Self.activityBody(deviceId: mine.deviceId, environment: "dev"), "field 'environment'"),
                (#"{"matchId": "m1", "updateToken": "\#(HTTPHarness.tokenA)"}"#, "field 'deviceId': missing"),
            ]
            for (body, expected) in cases {
                let response = try await client.call(.put, "/v1/activities/act_1", bearer: mine.deviceSecret, json: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.apiError?.code == "invalid_request")
                #expect(response.apiError?.message.contains(expected) == true, "\(response.text)")
            }
            let badId = try await client.call(
                .put, "/v1/activities/bad%2Fid", bearer: mine.deviceSecret, json: Self.activityBody(deviceId: mine.deviceId))
            #expect(badId.status == .badRequest)
            #expect(badId.apiError?.message.contains("activityId") == true)
        }
    }

    @Test("The same update token on another activity is 409 conflict")
    func tokenConflict() async throws {
        try await HTTPHarness().run { client in
            let mine = try await client.register()
            let theirs = try await client.register()
            let first = try await client.call(
                .put, "/v1/activities/act_1", bearer: mine.deviceSecret, json: Self.activityBody(deviceId: mine.deviceId))
            #expect(first.status == .ok)
            let second = try await client.call(
                .put, "/v1/activities/act_2", bearer: theirs.deviceSecret, json: Self.activityBody(deviceId: theirs.deviceId))
            #expect(second.status == .conflict)
            #expect(second.apiError?.code == "conflict")
        }
    }

    @Test("DELETE /v1/activities/{id}: 403 for another device, 404 when unknown, 204 for the owner")
    func deleteActivity() async throws {
        try await HTTPHarness().run { client in
            let mine = try await client.register()
            let theirs = try await client.register()
            let put = try await client.call(
                .put, "/v1/activities/act_1", bearer: mine.deviceSecret, json: Self.activityBody(deviceId: mine.deviceId))
            #expect(put.status == .ok)

            let stranger = try await client.call(.delete, "/v1/activities/act_1", bearer: theirs.deviceSecret)
            #expect(stranger.status == .forbidden)
            #expect(stranger.apiError?.code == "forbidden")

            let unknown = try await client.call(.delete, "/v1/activities/act_nope", bearer: mine.deviceSecret)
            #expect(unknown.status == .notFound)
            #expect(unknown.apiError?.code == "not_found")

            let anonymous = try await client.call(.delete, "/v1/activities/act_1")
            #expect(anonymous.status == .unauthorized)

            let owner = try await client.call(.delete, "/v1/activities/act_1", bearer: mine.deviceSecret)
            #expect(owner.status == .noContent)
        }
    }
}
