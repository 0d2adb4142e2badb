import Hummingbird
import Logging
import MatchcastService

/// Turns everything a handler or the router throws into the API's JSON error shape, so no request
/// ever gets Hummingbird's bare default answer.
///
/// `ServiceError` maps by code; Hummingbird's own errors by status (an unmatched route is 404, or
/// 405 with `Allow` when the path exists under other methods); anything else is a bug: logged and
/// answered 500 with a generic message.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let apiError = Self.apiError(for: error, request: request)
            if apiError.status.code >= 500 {
                context.logger.error("request failed", metadata: [
                    "http.method": "\(request.method.rawValue)",
                    "http.route": "\(context.endpointPath ?? "unmatched")",
                    "error.type": "\(type(of: error))",
                    "error": "\(String(describing: error).prefix(200))",
                ])
            } else {
                context.logger.debug("request refused", metadata: [
                    "http.route": "\(context.endpointPath ?? "unmatched")",
                    "error.code": "\(apiError.code)",
                ])
            }
            return apiError.response()
        }
    }

    static func apiError(for error: any Error, request: Request) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as ServiceError:
            return APIError(error)
        case let error as any HTTPResponseError:
            return apiError(status: error.status, request: request)
        default:
            return .internalError
        }
    }

    /// Hummingbird's errors carry only a status; give each the API's code and a fixed message.
    private static func apiError(status: HTTPResponse.Status, request: Request) -> APIError {
        switch status {
        case .notFound:
            // The router found no responder: either no such path, or not under this method.
            let allowed = APIRoute.allowedMethods(at: request.uri.path)
            if allowed.isEmpty {
                return APIError(.notFound, .notFound, "no such route")
            }
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            return APIError(.methodNotAllowed, .methodNotAllowed, "method \(request.method.rawValue.prefix(32)) not allowed; use \(allow)",
                            headers: [.allow: allow])
        case .contentTooLarge:
            return APIError(.contentTooLarge, .contentTooLarge, "request body is too large")
        case .unauthorized:
            return .unauthorized("missing or invalid credentials")
        case .forbidden:
            return .forbidden("forbidden")
        case .serviceUnavailable:
            return .unavailable("service unavailable")
        default:
            if (400..<500).contains(status.code) {
                return .invalidRequest(status.reasonPhrase.isEmpty ? "bad request" : status.reasonPhrase.lowercased())
            }
            return .internalError
        }
    }
}
