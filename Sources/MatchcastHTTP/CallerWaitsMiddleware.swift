import Hummingbird
import MatchcastStore

/// Marks everything a request does as waited for (`StoreWrites.callerWaits`): its store writes commit at once rather
/// than lingering to share a commit with polling's and delivery's.
struct CallerWaitsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await StoreWrites.$callerWaits.withValue(true) { try await next(request, context) }
    }
}
