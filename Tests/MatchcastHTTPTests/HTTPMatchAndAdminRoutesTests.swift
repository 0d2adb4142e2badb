import Foundation
import Hummingbird
import HummingbirdTesting
import MatchcastHTTP
import MatchcastService
import Testing

@Suite("HTTP API: matches and admin feedback")
struct HTTPMatchAndAdminRoutesTests {
    private struct Matches: Decodable { var matches: [MatchView] }

    @Test("GET /v1/matches[/{id}] answers any device and the admin key, not strangers")
    func matches() async throws {
        let harness = HTTPHarness(adminKey: HTTPHarness.adminKey)
        try await harness.seedMatch()
        try await harness.run { client in
            let device = try await client.register()
            for bearer in [device.deviceSecret, HTTPHarness.adminKey] {
                let list = try await client.call(.get, "/v1/matches", bearer: bearer)
                #expect(list.status == .ok)
                #expect(list.isJSON)
                let matches = try list.decode(Matches.self).matches
                #expect(matches.map(\.id) == ["epl-mun-liv"])
                #expect(matches.first?.contentState?.summary.isEmpty == false)
                #expect(list.text.contains(#""updatedAt":"2026-04-21T15:12:09Z""#))

                let one = try await client.call(.get, "/v1/matches/epl-mun-liv", bearer: bearer)
                #expect(one.status == .ok)
                #expect(try one.decode(MatchView.self).home.short == "MUN")
            }
            let unknown = try await client.call(.get, "/v1/matches/nope", bearer: device.deviceSecret)
            #expect(unknown.status == .notFound)
            #expect(unknown.apiError?.code == "not_found")

            let stranger = try await client.call(.get, "/v1/matches")
            #expect(stranger.status == .unauthorized)
            let wrongKey = try await client.call(.get, "/v1/matches/epl-mun-liv", bearer: "admin-key-for-test")
            #expect(wrongKey.status == .unauthorized)
        }
    }

    @Test("POST /v1/feedback without an admin key configured is 403")
    func feedbackWithoutAdminKey() async throws {
        try await HTTPHarness(adminKey: nil).run { client in
            let body = #"{"token": "\#(HTTPHarness.tokenA)", "reason": "Unregistered"}"#
            for bearer in [nil, "", "anything"] as [String?] {
                let response = try await client.call(.post, "/v1/feedback", bearer: bearer, json: body)
                #expect(response.status == .forbidden)
                #expect(response.apiError?.code == "forbidden")
                #expect(response.apiError?.message == "no admin key configured")
            }
        }
    }

    @Test("POST /v1/feedback needs the admin key; a device secret is not one")
    func feedbackAuthorization() async throws {
        try await HTTPHarness(adminKey: HTTPHarness.adminKey).run { client in
            let device = try await client.register()
            let body = #"{"token": "\#(HTTPHarness.tokenA)", "reason": "Unregistered"}"#
            for bearer in [nil, "wrong", HTTPHarness.adminKey + "x", device.deviceSecret] as [String?] {
                let response = try await client.call(.post, "/v1/feedback", bearer: bearer, json: body)
                #expect(response.status == .unauthorized)
                #expect(response.apiError?.code == "unauthorized")
            }
            let unknown = try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: body)
            #expect(unknown.status == .ok)
            #expect(unknown.text == #"{"invalidated":false}"#)
        }
    }

    @Test("POST /v1/feedback with a live update token ends its activity: invalidated true")
    func feedbackInvalidates() async throws {
        try await HTTPHarness(adminKey: HTTPHarness.adminKey).run { client in
            let device = try await client.register()
            let put = try await client.call(
                .put, "/v1/activities/act_1", bearer: device.deviceSecret,
                json: #"{"deviceId": "\#(device.deviceId)", "matchId": "epl-mun-liv", "updateToken": "\#(HTTPHarness.tokenA)"}"#)
            #expect(put.status == .ok)
            let response = try await client.call(
                .post, "/v1/feedback", bearer: HTTPHarness.adminKey,
                json: #"{"token": "\#(HTTPHarness.tokenA)", "reason": "BadDeviceToken"}"#)
            #expect(response.status == .ok)
            #expect(response.text == #"{"invalidated":true}"#)

            let bad = try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: #"{"token": "x"}"#)
            #expect(bad.status == .badRequest)
            #expect(bad.apiError?.message == "field 'reason': missing")
        }
    }
}
