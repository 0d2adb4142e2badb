import Foundation
import Hummingbird
import HummingbirdTesting
import MatchcastHTTP
import MatchcastService
import MatchcastCore
import MatchcastStore
import MatchcastTesting
import Testing

@Suite("HTTP API: devices, tokens, follows")
struct HTTPDeviceRoutesTests {
    @Test("POST /v1/devices registers a device: 201 with a secret, not cached")
    func register() async throws {
        try await HTTPHarness().run { client in
            let response = try await client.call(.post, "/v1/devices")
            #expect(response.status == .created)
            #expect(response.isJSON)
            #expect(response.headers[.cacheControl] == "no-store")
            let registration = try response.decode(DeviceRegistration.self)
            #expect(!registration.deviceId.isEmpty)
            #expect(registration.deviceSecret.hasPrefix(registration.deviceId + "."))
            let other = try await client.register()
            #expect(other.deviceId != registration.deviceId)
        }
    }

    static let badAuthorizations: [String?] = [
        nil, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer nonsense", "Bearer dev_x.wrong",
        "Bearer " + String(repeating: "x", count: 600),
    ]

    @Test("A missing, malformed or wrong bearer is 401 in the JSON error shape", arguments: badAuthorizations)
    func unauthorized(authorization: String?) async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            var headers: HTTPFields = [:]
            if let authorization { headers[.authorization] = authorization }
            let response = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows", headers: headers)
            #expect(response.status == .unauthorized)
            #expect(response.isJSON)
            #expect(response.headers[.wwwAuthenticate] == "Bearer")
            #expect(response.apiError?.code == "unauthorized")
        }
    }

    @Test("The right secret of another device is refused: 403 forbidden")
    func anotherDevicesPath() async throws {
        try await HTTPHarness().run { client in
            let mine = try await client.register()
            let theirs = try await client.register()
            let secret = mine.deviceSecret
            let base = "/v1/devices/\(theirs.deviceId)"
            let calls: [(HTTPRequest.Method, String, String?)] = [
                (.get, base + "/follows", nil),
                (.put, base + "/follows/epl-mun-liv", nil),
                (.delete, base + "/follows/epl-mun-liv", nil),
                (.put, base + "/push-to-start-token", #"{"token": "\#(HTTPHarness.tokenA)", "environment": "sandbox"}"#),
            ]
            for (method, uri, json) in calls {
                let response = try await client.call(method, uri, bearer: secret, json: json)
                #expect(response.status == .forbidden, "\(method) \(uri)")
                #expect(response.apiError?.code == "forbidden")
            }
            // Nothing changed on the other device.
            let follows = try await client.call(.get, base + "/follows", bearer: theirs.deviceSecret)
            #expect(follows.text == #"{"follows":[]}"#)
        }
    }

    @Test("PUT push-to-start-token stores a valid token: 204")
    func pushToStartToken() async throws {
        let harness = HTTPHarness()
        let deviceId = try await harness.run { client in
            let device = try await client.register()
            // Upper-case hex and an unknown field are fine.
            let response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret,
                json: #"{"token": "\#(HTTPHarness.tokenA.uppercased())", "environment": "sandbox", "extra": [1, 2]}"#)
            #expect(response.status == .noContent)
            #expect(response.body.readableBytes == 0)
            return device.deviceId
        }
        let stored = await harness.store.pushToStartToken(deviceId: deviceId)
        #expect(stored?.token == HTTPHarness.tokenA)
        #expect(stored?.environment == .sandbox)
    }

    /// Bodies refused by `PUT push-to-start-token`, and what the message must say.
    static let badPushToStartBodies: [(body: String, expected: String)] = [
        (#"{"token": "zz", "environment": "sandbox"}"#, "token"),
        (#"{"token": "abc", "environment": "production"}"#, "token"),
        (#"{"environment": "sandbox"}"#, "field 'token': missing"),
        (#"{"token": 42, "environment": "sandbox"}"#, "field 'token'"),
        (#"{"token": "\#(HTTPHarness.tokenA)"}"#, "field 'environment': missing"),
        (#"{"token": "\#(HTTPHarness.tokenA)", "environment": "staging"}"#, "field 'environment': unknown value 'staging'"),
        (#"{"token": null, "environment": "sandbox"}"#, "field 'token'"),
        (#"["token"]"#, "request body"),
        ("", "request body"),
    ]

    @Test("A bad push-to-start body is 400 invalid_request naming the field", arguments: badPushToStartBodies)
    func pushToStartValidation(body: String, expected: String) async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            let response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret, json: body)
            #expect(response.status == .badRequest)
            #expect(response.isJSON)
            let error = try #require(response.apiError)
            #expect(error.code == "invalid_request")
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test("PUT fcm-token and PUT webpush-subscription store the device's address: 204, and a later one replaces it")
    func directAddresses() async throws {
        let harness = HTTPHarness()
        let fcmToken = "dQw4w9WgXcQ:APA91bF" + String(repeating: "k2_Lp-9z", count: 16)
        let browser = FakePushService.Subscriber.unattached()
        let (android, web) = try await harness.run { client in
            let android = try await client.register()
            let response = try await client.call(
                .put, "/v1/devices/\(android.deviceId)/fcm-token", bearer: android.deviceSecret, json: #"{"token": "\#(fcmToken)"}"#)
            #expect(response.status == .noContent)
            let web = try await client.register()
            let subscribed = try await client.call(
                .put, "/v1/devices/\(web.deviceId)/webpush-subscription", bearer: web.deviceSecret,
                json: String(decoding: browser.json, as: UTF8.self))
            #expect(subscribed.status == .noContent, "\(subscribed.text)")
            // Another device's address is not this one's to set.
            let other = try await client.call(
                .put, "/v1/devices/\(web.deviceId)/fcm-token", bearer: android.deviceSecret, json: #"{"token": "\#(fcmToken)"}"#)
            #expect(other.status == .forbidden)
            return (android.deviceId, web.deviceId)
        }
        let stored = await harness.store.pushToStartToken(deviceId: android)
        #expect(stored.map { DirectAddress(stored: $0.token) } == .fcm(fcmToken))
        let subscription = await harness.store.pushToStartToken(deviceId: web)
        guard case .webPush(let json)? = subscription.flatMap({ DirectAddress(stored: $0.token) }) else {
            Issue.record("no subscription stored: \(String(describing: subscription))")
            return
        }
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(object?["endpoint"] as? String == browser.endpoint.absoluteString)
        #expect(json.hasPrefix(#"{"endpoint":""#) && !json.contains(" "), "stored in its one canonical form: \(json)")
    }

    /// Bodies refused by `PUT fcm-token` and `PUT webpush-subscription`, and what the message must say.
    static let badAddressBodies: [(path: String, body: String, expected: String)] = [
        ("fcm-token", #"{"token": ""}"#, "field 'token'"),
        ("fcm-token", #"{"token": "has spaces in it"}"#, "field 'token'"),
        ("fcm-token", #"{"token": "\#(String(repeating: "a", count: 4097))"}"#, "field 'token'"),
        ("fcm-token", #"{}"#, "field 'token': missing"),
        ("webpush-subscription", #"{"keys": {"p256dh": "AAAA", "auth": "AAAA"}}"#, "endpoint"),
        ("webpush-subscription", #"{"endpoint": "http://push.example.com/x", "keys": {"p256dh": "AAAA", "auth": "AAAA"}}"#, "https"),
        ("webpush-subscription", #"{"endpoint": "https://push.example.com/x", "keys": {"p256dh": "AAAA", "auth": "AAAA"}}"#, "p256dh"),
        ("webpush-subscription", #"{"endpoint": "https://push.example.com/x"}"#, "keys"),
        ("webpush-subscription", "not json", "JSON"),
    ]

    @Test("A bad FCM token or Web Push subscription is 400 invalid_request saying what is wrong", arguments: badAddressBodies)
    func directAddressValidation(path: String, body: String, expected: String) async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            let response = try await client.call(.put, "/v1/devices/\(device.deviceId)/\(path)", bearer: device.deviceSecret, json: body)
            #expect(response.status == .badRequest)
            let error = try #require(response.apiError)
            #expect(error.code == "invalid_request")
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test("Following is idempotent, listed, and undone by DELETE (204)")
    func followLifecycle() async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            let uri = "/v1/devices/\(device.deviceId)/follows/epl-mun-liv"
            let first = try await client.call(.put, uri, bearer: device.deviceSecret)
            #expect(first.status == .ok)
            let follow = try first.decode(FollowView.self)
            #expect(follow.matchId == "epl-mun-liv")
            #expect(first.text.contains(#""followedAt":"2027-01-15T08:00:00Z""#))

            let again = try await client.call(.put, uri, bearer: device.deviceSecret)
            #expect(again.status == .ok)
            #expect(try again.decode(FollowView.self) == follow)

            let list = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows", bearer: device.deviceSecret)
            #expect(list.status == .ok)
            struct Follows: Decodable { var follows: [FollowView] }
            #expect(try list.decode(Follows.self).follows == [follow])

            let unfollow = try await client.call(.delete, uri, bearer: device.deviceSecret)
            #expect(unfollow.status == .noContent)
            let unfollowAgain = try await client.call(.delete, uri, bearer: device.deviceSecret)
            #expect(unfollowAgain.status == .noContent)
            let empty = try await client.call(.get, "/v1/devices/\(device.deviceId)/follows", bearer: device.deviceSecret)
            #expect(try empty.decode(Follows.self).follows.isEmpty)
        }
    }

    @Test("A malformed match id in the path is 400 naming the field")
    func badMatchId() async throws {
        try await HTTPHarness().run { client in
            let device = try await client.register()
            let response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/follows/bad%20id", bearer: device.deviceSecret)
            #expect(response.status == .badRequest)
            #expect(response.apiError?.message.contains("matchId") == true)
        }
    }
}

