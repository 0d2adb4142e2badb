import Foundation
import Hummingbird
import HummingbirdTesting
import MatchcastHTTP
import MatchcastService
import Testing
import Yams

/// Keeps `ops/openapi.yaml` true to the router: the same calls, answered as documented.
@Suite("ops/openapi.yaml matches the API")
struct OpenAPIDocumentTests {
    struct Operation: Hashable, CustomStringConvertible {
        var method: String
        var path: String
        var operationId: String
        var description: String { "\(method) \(path) (\(operationId))" }
    }

    static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    static func document() throws -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ops/openapi.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        return try #require(try Yams.load(yaml: text) as? [String: Any])
    }

    static func documentedOperations() throws -> Set<Operation> {
        let paths = try #require(try document()["paths"] as? [String: Any])
        var operations: Set<Operation> = []
        for (path, item) in paths {
            let item = try #require(item as? [String: Any])
            for method in methods {
                guard let operation = item[method] as? [String: Any] else { continue }
                let id = try #require(operation["operationId"] as? String, "\(method) \(path) has no operationId")
                operations.insert(Operation(method: method.uppercased(), path: path, operationId: id))
            }
        }
        return operations
    }

    /// The path with every `{parameter}` filled in.
    static func concrete(_ path: String) -> String {
        path.replacingOccurrences(of: #"\{[^}]+\}"#, with: "probe", options: .regularExpression)
    }

    @Test("The document is OpenAPI 3.1 with both security schemes")
    func header() throws {
        let document = try Self.document()
        #expect((document["openapi"] as? String)?.hasPrefix("3.1") == true)
        let components = try #require(document["components"] as? [String: Any])
        let schemes = try #require(components["securitySchemes"] as? [String: Any])
        #expect(Set(schemes.keys) == ["deviceSecret", "adminKey"])
    }

    @Test("The documented (method, path, operationId) set equals APIRoute.all, the router's table")
    func sameCalls() throws {
        let documented = try Self.documentedOperations()
        let routed = Set(APIRoute.all.map { Operation(method: $0.method.rawValue, path: $0.path, operationId: $0.operationId) })
        #expect(routed.count == APIRoute.all.count, "APIRoute.all lists a call twice")
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed))")
        #expect(routed.subtracting(documented).isEmpty, "routed but not documented: \(routed.subtracting(documented))")
    }

    @Test("The router answers every documented call and refuses other methods on documented paths with 405")
    func routerAgreesWithDocument() async throws {
        let documented = try Self.documentedOperations()
        let byPath = Dictionary(grouping: documented, by: \.path)
        try await HTTPHarness().run { client in
            for operation in documented {
                let response = try await client.call(
                    HTTPRequest.Method(operation.method)!, Self.concrete(operation.path), json: "{}")
                // Routed: anything but the router's own "no such route" or "method not allowed".
                #expect(response.status != .methodNotAllowed, "\(operation)")
                #expect(response.apiError?.message != "no such route", "\(operation)")
            }
            for (path, operations) in byPath {
                let allowed = Set(operations.map(\.method))
                for method in Self.methods.map({ $0.uppercased() }) where !allowed.contains(method) {
                    let response = try await client.call(HTTPRequest.Method(method)!, Self.concrete(path))
                    #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                    let answered = Set((response.headers[.allow] ?? "").split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    })
                    #expect(answered == allowed, "\(method) \(path)")
                }
            }
        }
    }

    @Test("The documented error codes cover every code the service can throw")
    func errorCodes() throws {
        let components = try #require(try Self.document()["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        let error = try #require(schemas["Error"] as? [String: Any])
        let properties = try #require(error["properties"] as? [String: Any])
        let detail = try #require((properties["error"] as? [String: Any])?["properties"] as? [String: Any])
        let codes = try #require((detail["code"] as? [String: Any])?["enum"] as? [String])
        let documented = Set(codes)
        for code in ServiceError.Code.allCases {
            #expect(documented.contains(code.rawValue), "\(code.rawValue) is not documented")
        }
        let httpCodes: [APIError.Code] = [.invalidRequest, .unauthorized, .forbidden, .notFound, .methodNotAllowed,
                                          .conflict, .contentTooLarge, .unavailable, .internal]
        #expect(documented == Set(httpCodes.map(\.rawValue)))
    }

    @Test("Every documented operation declares its security as the router enforces it")
    func security() throws {
        let paths = try #require(try Self.document()["paths"] as? [String: Any])
        let open: Set<String> = ["registerDevice", "health", "readiness", "metrics"]
        for (_, item) in paths {
            let item = try #require(item as? [String: Any])
            for method in Self.methods {
                guard let operation = item[method] as? [String: Any], let id = operation["operationId"] as? String else { continue }
                let requirements = try #require(operation["security"] as? [[String: Any]], "\(id) declares no security")
                let schemes = Set(requirements.flatMap(\.keys))
                switch id {
                case _ where open.contains(id): #expect(schemes.isEmpty, "\(id)")
                case "reportDeadToken", "listDeadLetters", "adminDeviceDiagnostics": #expect(schemes == ["adminKey"], "\(id)")
                case "listMatches", "getMatch": #expect(schemes == ["deviceSecret", "adminKey"], "\(id)")
                default: #expect(schemes == ["deviceSecret"], "\(id)")
                }
            }
        }
    }
}
