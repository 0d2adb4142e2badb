import Foundation
import Hummingbird
import MatchcastCore
import MatchcastService

/// A refused request as the API answers it: a status, a fixed machine-readable code and a one-line
/// message, sent as `{"error": {"code": "...", "message": "..."}}`. Handlers just `throw` it.
public struct APIError: Error, HTTPResponseError, Sendable, Hashable, CustomStringConvertible {
    /// The `error.code` values the API sends; documented in `ops/openapi.yaml`.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let invalidRequest = Code(rawValue: "invalid_request")
        public static let unauthorized = Code(rawValue: "unauthorized")
        public static let forbidden = Code(rawValue: "forbidden")
        public static let notFound = Code(rawValue: "not_found")
        public static let methodNotAllowed = Code(rawValue: "method_not_allowed")
        public static let conflict = Code(rawValue: "conflict")
        public static let contentTooLarge = Code(rawValue: "content_too_large")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let `internal` = Code(rawValue: "internal")

        public var description: String { rawValue }
    }

    public let status: HTTPResponse.Status
    public let code: Code
    public let message: String
    /// Extra response headers (`Allow` on 405, `WWW-Authenticate` on 401).
    public let headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: Code, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The service's refusal, with the status its code stands for.
    public init(_ error: ServiceError) {
        switch error.code {
        case .invalidRequest: self.init(.badRequest, .invalidRequest, error.message)
        case .unauthorized: self = .unauthorized(error.message)
        case .forbidden: self.init(.forbidden, .forbidden, error.message)
        case .notFound: self.init(.notFound, .notFound, error.message)
        case .conflict: self.init(.conflict, .conflict, error.message)
        case .unavailable: self = .unavailable(error.message)
        }
    }

    /// 503 with `Retry-After`: the store (or the replica running the match) did not answer; the same call, made
    /// again after that many seconds, usually succeeds, and nothing the call changed is half done.
    public static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, .unavailable, message, headers: [.retryAfter: "\(retryAfterSeconds)"])
    }

    /// What a 503 asks a client to wait before trying again.
    public static let retryAfterSeconds = 2

    public static func invalidRequest(_ message: String) -> APIError {
        APIError(.badRequest, .invalidRequest, message)
    }

    /// 401 with the challenge RFC 9110 asks for.
    public static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, .unauthorized, message, headers: [.wwwAuthenticate: "Bearer"])
    }

    public static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, .forbidden, message)
    }

    public static func contentTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, .contentTooLarge, "request body is larger than \(limit) bytes")
    }

    /// What the caller sees when something unexpected failed; the cause is logged, never sent.
    public static let internalError = APIError(.internalServerError, .internal, "internal error")

    public var description: String { "\(status.code) \(code): \(message)" }

    /// The JSON body of every error response.
    public struct Body: Codable, Sendable {
        public struct Detail: Codable, Sendable {
            public var code: String
            public var message: String
        }

        public var error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The response, independent of the request context's coders so the shape never varies.
    func response() -> Response {
        let body = Body(error: .init(code: code.rawValue, message: message))
        // Two strings always encode; the fallback only satisfies the type checker.
        let data = (try? JSON.encoder().encode(body)) ?? Data(#"{"error":{"code":"internal","message":"internal error"}}"#.utf8)
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
