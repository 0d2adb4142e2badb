import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MatchcastCore
@testable import MatchcastHTTP
import MatchcastService
import Testing

@Suite("HTTP API: errors, limits and fuzzing")
struct HTTPErrorHandlingTests {
    @Test("A body over the limit is 413 content_too_large, before authentication")
    func bodyTooLarge() async throws {
        try await HTTPHarness(adminKey: HTTPHarness.adminKey, maxBodyBytes: 1024).run { client in
            let device = try await client.register()
            let big = #"{"token": "\#(String(repeating: "a", count: 2000))", "environment": "sandbox"}"#
            for bearer in [device.deviceSecret, nil] {
                let response = try await client.call(
                    .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: bearer, json: big)
                #expect(response.status == .contentTooLarge)
                #expect(response.isJSON)
                #expect(response.apiError?.code == "content_too_large")
            }
            let feedback = try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: big)
            #expect(feedback.status == .contentTooLarge)
            // Just under the limit is decoded (and refused for its content, not its size).
            let fits = #"{"token": "\#(String(repeating: "a", count: 900))", "environment": "sandbox"}"#
            let response = try await client.call(
                .put, "/v1/devices/\(device.deviceId)/push-to-start-token", bearer: device.deviceSecret, json: fits)
            #expect(response.status == .badRequest)
        }
    }

    static let malformedBodies: [String] = [
        "{", "not json", #"{"token": "ab""#, "\u{0}\u{1}\u{2}", "[1, 2", #"{"token": "\#(HTTPHarness.tokenA)", "reason": }"#,
        String(repeating: "[", count: 10_000), String(repeating: #"{"a":"#, count: 3000),
    ]

    @Test("Malformed JSON is 400 invalid_request", arguments: malformedBodies)
    func malformedJSON(body: String) async throws {
        try await HTTPHarness(adminKey: HTTPHarness.adminKey).run { client in
            let response = try await client.call(.post, "/v1/feedback", bearer: HTTPHarness.adminKey, json: body)
            #expect(response.status == .badRequest)
            #expect(response.isJSON)
            #expect(response.apiError?.code == "invalid_request")
        }
    }

    @Test("An unknown route is 404 and a wrong method 405 with Allow, both in the JSON error shape")
    func unknownRoutesAndMethods() async throws {
        try await HTTPHarness().run { client in
            for uri in ["/", "/v1", "/v2/devices", "/v1/devices/x/y", "/v1/matches/a/b", "/healthz/x", "/favicon.ico"] {
                let response = try await client.call(.get, uri)
                #expect(response.status == .notFound, "\(uri)")
                #expect(response.isJSON)
                #expect(response.apiError?.code == "not_found")
            }
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.get, "/v1/devices", "POST"),
                (.post, "/v1/devices/d1/follows/m1", "PUT, DELETE"),
                (.patch, "/v1/activities/a1", "PUT, DELETE"),
                (.delete, "/healthz", "GET"),
                (.head, "/metrics", "GET"),
                (HTTPRequest.Method("PURGE")!, "/v1/matches", "GET"),
            ]
            for (method, uri, allow) in cases {
                let response = try await client.call(method, uri)
                #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                #expect(response.headers[.allow] == allow)
                #expect(response.isJSON)
                #expect(response.apiError?.code == "method_not_allowed")
            }
        }
    }

    @Test("Every error code the service can throw maps to its status")
    func serviceErrorMapping() {
        let expected: [ServiceError.Code: Int] = [
            .invalidRequest: 400, .unauthorized: 401, .forbidden: 403, .notFound: 404, .conflict: 409, .unavailable: 503,
        ]
        for code in ServiceError.Code.allCases {
            let error = APIError(ServiceError(code, "m"))
            #expect(Int(error.status.code) == expected[code])
            #expect(error.code.rawValue == code.rawValue)
            #expect(error.message == "m")
        }
    }

    @Test("A non-ServiceError thrown by a handler is a generic 500 that leaks nothing")
    func unexpectedErrorIsGeneric500() async throws {
        struct Secret: Error, CustomStringConvertible {
            var description: String { "database password is hunter2" }
        }
        let router = Router(context: APIRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.get("/boom") { _, _ -> String in throw Secret() }
        let app = Application(router: router, logger: Logger(label: "test.http"))
        try await app.test(.router) { client in
            let response = try await client.call(.get, "/boom")
            #expect(response.status == .internalServerError)
            #expect(response.isJSON)
            #expect(response.text == #"{"error":{"code":"internal","message":"internal error"}}"#)
        }
    }

    @Test("503 unavailable (the store or a match's replica did not answer) asks the client to come back: Retry-After")
    func unavailableCarriesRetryAfter() throws {
        let fromService = APIError(ServiceError(.unavailable, "storage is unavailable (connection refused)")).response()
        #expect(fromService.status == .serviceUnavailable)
        #expect(fromService.headers[.retryAfter] == "\(APIError.retryAfterSeconds)")
        #expect(fromService.headers[.contentType] == "application/json")
        // Hummingbird's own 503 gets the same.
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/matches"),
            body: RequestBody(buffer: ByteBuffer()))
        let fromServer = APIErrorMiddleware<BasicRequestContext>.apiError(for: HTTPError(.serviceUnavailable), request: request)
        #expect(fromServer.headers[.retryAfter] == "\(APIError.retryAfterSeconds)" && fromServer.code == .unavailable)
        // Nothing else asks for a retry.
        #expect(APIError(ServiceError(.conflict, "taken")).headers[.retryAfter] == nil)
    }

    @Test("Fuzz: random bodies, paths, methods and credentials never yield a 5xx")
    func fuzz() async throws {
        let harness = HTTPHarness(adminKey: HTTPHarness.adminKey)
        try await harness.seedMatch()
        try await harness.run { client in
            let device = try await client.register()
            var rng = SeededGenerator(seed: 0x5EED)
            var fuzzer = RequestFuzzer(deviceId: device.deviceId, secret: device.deviceSecret)
            let documentedCodes: Set<String> = [
                "invalid_request", "unauthorized", "forbidden", "not_found", "method_not_allowed", "conflict",
                "content_too_large", "unavailable",
            ]
            var seen: Set<Int> = []
            for round in 0..<300 {
                let request = fuzzer.next(using: &rng)
                let response = try await client.execute(
                    uri: request.uri, method: request.method, headers: request.headers, body: request.body)
                seen.insert(response.status.code)
                #expect(response.status.code < 500, "round \(round): \(request.method) \(request.uri) → \(response.status): \(response.text)")
                if response.status.code >= 400 {
                    let code = response.apiError?.code ?? "<not the error shape>"
                    #expect(documentedCodes.contains(code), "round \(round): \(request.method) \(request.uri) → \(response.text)")
                }
            }
            // The fuzzer got past routing, authentication and decoding, not just bounced off the edge.
            #expect(seen.isSuperset(of: [200, 204, 400, 401, 403, 404, 405, 413]), "statuses seen: \(seen.sorted())")
        }
    }
}

/// Random requests: mostly aimed at real routes (so they get past routing and authentication),
/// with random bytes, truncated or mistyped JSON as bodies.
struct RequestFuzzer {
    struct FuzzRequest {
        var method: HTTPRequest.Method
        var uri: String
        var headers: HTTPFields
        var body: ByteBuffer?
    }

    let deviceId: String
    let secret: String

    private static let methods: [HTTPRequest.Method] = [
        .get, .put, .post, .delete, .patch, .head, .options, HTTPRequest.Method("FUZZ")!,
    ]
    private static let unreserved = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:@!$&'()*+,;=")

    mutating func next(using rng: inout SeededGenerator) -> FuzzRequest {
        let route = APIRoute.all.randomElement(using: &rng)!
        let method = Int.random(in: 0..<4, using: &rng) == 0 ? Self.methods.randomElement(using: &rng)! : route.method
        var headers: HTTPFields = [:]
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: break
        case 1: headers[.authorization] = "Bearer \(HTTPHarness.adminKey)"
        case 2: headers[.authorization] = randomText(maxLength: 80, using: &rng)
        default: headers[.authorization] = "Bearer \(secret)"
        }
        return FuzzRequest(method: method, uri: uri(for: route, using: &rng), headers: headers, body: body(using: &rng))
    }

    private func uri(for route: APIRoute, using rng: inout SeededGenerator) -> String {
        if Int.random(in: 0..<8, using: &rng) == 0 {
            // A path that is no route at all.
            return "/" + (0..<Int.random(in: 0...4, using: &rng)).map { _ in segment(using: &rng) }.joined(separator: "/")
        }
        var path = route.path
        for name in ["deviceId", "matchId", "activityId", "id"] {
            let value: String
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: value = name == "deviceId" ? deviceId : "epl-mun-liv"
            case 1: value = segment(using: &rng)
            default: value = String(repeating: "x", count: Int.random(in: 100...400, using: &rng))
            }
            path = path.replacingOccurrences(of: "{\(name)}", with: value)
        }
        if Int.random(in: 0..<6, using: &rng) == 0 { path += "?q=" + segment(using: &rng) }
        return path
    }

    /// A path segment: unreserved characters and percent-encoded random bytes.
    private func segment(using rng: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...24, using: &rng)).map { _ in
            Int.random(in: 0..<4, using: &rng) == 0
                ? String(format: "%%%02X", UInt8.random(in: .min ... .max, using: &rng))
                : String(Self.unreserved.randomElement(using: &rng)!)
        }.joined()
    }

    private func randomText(maxLength: Int, using rng: inout SeededGenerator) -> String {
        String((0..<Int.random(in: 0...maxLength, using: &rng)).map { _ in
            Character(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng)))
        })
    }

    private func body(using rng: inout SeededGenerator) -> ByteBuffer? {
        let fields: [String: String] = [
            "token": HTTPHarness.tokenA, "environment": "sandbox", "deviceId": deviceId, "matchId": "epl-mun-liv",
            "updateToken": HTTPHarness.tokenB, "reason": "Unregistered",
        ]
        switch Int.random(in: 0..<6, using: &rng) {
        case 0:
            return nil
        case 1:
            // Random bytes, sometimes over the 16 KiB limit.
            let count = Int.random(in: 0...(Int.random(in: 0..<10, using: &rng) == 0 ? 20_000 : 300), using: &rng)
            return ByteBuffer(bytes: (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &rng) })
        case 2:
            // Valid JSON with a random subset of the fields, some mistyped.
            let members = fields.filter { _ in Bool.random(using: &rng) }.sorted { $0.key < $1.key }.map { key, value in
                let json: String = switch Int.random(in: 0..<5, using: &rng) {
                case 0: "42"
                case 1: "null"
                case 2: "[\"\(value)\"]"
                default: "\"\(value)\""
                }
                return "\"\(key)\": \(json)"
            }
            return ByteBuffer(string: "{" + members.joined(separator: ", ") + "}")
        case 3:
            // Well-formed JSON cut short.
            let full = "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ") + "}"
            return ByteBuffer(string: String(full.prefix(Int.random(in: 0..<full.count, using: &rng))))
        case 4:
            return ByteBuffer(string: randomText(maxLength: 200, using: &rng))
        default:
            // Correct bodies, so handlers past decoding are exercised too.
            let full = "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ") + "}"
            return ByteBuffer(string: full)
        }
    }
}
