import AsyncHTTPClient
import Foundation
import MatchcastCLI
import MatchcastService
import NIOCore
import NIOHTTP1
import Synchronization

/// The registered devices, filled by the concurrent clients.
final class DeviceTable: Sendable {
    private let slots: Mutex<[DeviceRegistration?]>

    init(count: Int) { slots = Mutex(Array(repeating: nil, count: count)) }

    func set(_ index: Int, _ registration: DeviceRegistration) { slots.withLock { $0[index] = registration } }

    func get(_ index: Int) throws -> DeviceRegistration {
        guard let registration = slots.withLock({ $0[index] }) else { throw CommandFailure("device \(index) is not registered") }
        return registration
    }
}

/// The device API of serve, called as the app would.
struct DeviceAPI: Sendable {
    let client: HTTPClient
    let base: String
    let interrupted: @Sendable () -> Bool

    /// Runs `work(0..<count)` on `clients` concurrent tasks, each taking the next index; the first error stops all.
    func parallel(_ count: Int, clients: Int, _ work: @escaping @Sendable (Int) async throws -> Void) async throws {
        let next = NextIndex()
        let interrupted = self.interrupted
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, clients) {
                group.addTask {
                    while true {
                        let index = next.take()
                        guard index < count else { return }
                        if interrupted() { throw CommandFailure("interrupted") }
                        try await work(index)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func registerDevice() async throws -> DeviceRegistration {
        let body = try await send(.POST, "/v1/devices", expecting: 201)
        return try JSONDecoder().decode(DeviceRegistration.self, from: Data(body.readableBytesView))
    }

    func putPushToStartToken(_ device: DeviceRegistration, token: String) async throws {
        _ = try await send(
            .PUT, "/v1/devices/\(device.deviceId)/push-to-start-token", secret: device.deviceSecret,
            json: #"{"token":"\#(token)","environment":"production"}"#, expecting: 204)
    }

    func follow(_ device: DeviceRegistration, matchId: String) async throws {
        _ = try await send(.PUT, "/v1/devices/\(device.deviceId)/follows/\(matchId)", secret: device.deviceSecret, expecting: 200)
    }

    func unfollow(_ device: DeviceRegistration, matchId: String) async throws {
        _ = try await send(.DELETE, "/v1/devices/\(device.deviceId)/follows/\(matchId)", secret: device.deviceSecret, expecting: 204)
    }

    func putActivity(_ device: DeviceRegistration, activityId: String, matchId: String, updateToken: String) async throws {
        _ = try await send(
            .PUT, "/v1/activities/\(activityId)", secret: device.deviceSecret,
            json: #"{"deviceId":"\#(device.deviceId)","matchId":"\#(matchId)","updateToken":"\#(updateToken)","environment":"production"}"#,
            expecting: 200)
    }

    func matchIsKnown(_ device: DeviceRegistration, matchId: String) async throws -> Bool {
        (try? await send(.GET, "/v1/matches/\(matchId)", secret: device.deviceSecret, expecting: 200)) != nil
    }

    /// The value of a gauge or counter on `/metrics` (the sum of its series); nil when serve does not show it.
    func metric(_ name: String) async throws -> Double? {
        let body = String(buffer: try await send(.GET, "/metrics", expecting: 200, timeout: .seconds(10)))
        var total: Double?
        for line in body.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { total = (total ?? 0) + value }
        }
        return total
    }

    func isHealthy() async throws -> Bool {
        (try? await send(.GET, "/healthz", expecting: 200, timeout: .seconds(2))) != nil
    }

    private func send(
        _ method: HTTPMethod, _ path: String, secret: String? = nil, json: String? = nil, expecting status: UInt,
        timeout: TimeAmount = .seconds(30)
    ) async throws -> ByteBuffer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let secret { request.headers.add(name: "authorization", value: "Bearer " + secret) }
        if let json {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await client.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == status else {
            throw CommandFailure(
                "\(method) \(path): \(response.status.code), expected \(status): \(String(buffer: body).prefix(300))")
        }
        return body
    }
}

final class NextIndex: Sendable {
    private let value = Atomic<Int>(0)
    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}
