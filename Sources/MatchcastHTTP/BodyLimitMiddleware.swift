import Hummingbird

/// Refuses a request body larger than the limit with 413 before any handler reads it, and keeps the
/// collected body on the request so decoding does not read the stream twice.
struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let maxBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A declared length over the limit is refused without reading a byte.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBytes {
            throw APIError.contentTooLarge(limit: maxBytes)
        }
        var request = request
        do {
            _ = try await request.collectBody(upTo: maxBytes)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError.contentTooLarge(limit: maxBytes)
        }
        return try await next(request, context)
    }
}
