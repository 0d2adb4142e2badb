import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import NIOCore
import NIOHTTP1
import Testing
import Glibc

/// The broker's HTTP API, as a device and the operator call it.
struct BrokerAPI {
    struct Device: Sendable {
        var id: String
        var secret: String
        var index: Int
    }

    let client: HTTPClient
    let port: Int

    func call(_ method: HTTPMethod, _ path: String, bearer: String? = nil, json: String? = nil) async throws -> (Int, [UInt8]) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let bearer { request.headers.add(name: "authorization", value: "Bearer \(bearer)") }
        if let json {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), Array(body.readableBytesView))
    }

    func waitUntilHealthy() async throws {
        try await #require(eventually(within: 120, every: .milliseconds(50)) {
            (try? await call(.GET, "/healthz"))?.0 == 200
        }, "the broker answered /healthz")
    }

    func matchIsLive(_ id: String) async throws -> Bool {
        let (status, body) = try await call(.GET, "/v1/matches", bearer: CrashRecoveryTests.adminKey)
        guard status == 200 else { return false }
        return String(decoding: body, as: UTF8.self).contains("\"\(id)\"")
    }

    func register(index: Int) async throws -> Device {
        let (status, body) = try await call(.POST, "/v1/devices")
        try #require(status == 201 || status == 200, "register: \(status)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        return Device(
            id: try #require(object["deviceId"] as? String), secret: try #require(object["deviceSecret"] as? String),
            index: index)
    }

    func setPushToStartToken(_ device: Device, token: String) async throws {
        let (status, _) = try await call(
            .PUT, "/v1/devices/\(device.id)/push-to-start-token", bearer: device.secret,
            json: #"{"token": "\#(token)", "environment": "sandbox"}"#)
        try #require(status == 200 || status == 204, "push-to-start token: \(status)")
    }

    func follow(_ device: Device, match: String) async throws {
        let (status, _) = try await call(.PUT, "/v1/devices/\(device.id)/follows/\(match)", bearer: device.secret)
        try #require((200..<300).contains(status), "follow: \(status)")
    }

    func putActivity(_ activityId: String, device: Device, match: String, updateToken: String) async throws {
        let (status, body) = try await call(
            .PUT, "/v1/activities/\(activityId)", bearer: device.secret,
            json: #"{"deviceId": "\#(device.id)", "matchId": "\#(match)", "updateToken": "\#(updateToken)"}"#)
        try #require(status == 200, "put activity: \(status) \(String(decoding: body, as: UTF8.self))")
    }
}
