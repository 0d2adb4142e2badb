import Foundation
import MatchcastFeeds
import Synchronization

/// A `FeedTransport` that answers from a script and remembers every request it was sent.
final class ScriptedTransport: FeedTransport {
    enum Reply: Sendable {
        case response(FeedResponse)
        case failure(any Error & Sendable)
    }

    private struct State {
        var replies: [Reply]
        var requests: [FeedRequest] = []
    }

    private let state: Mutex<State>
    private let handler: (@Sendable (FeedRequest) -> Reply)?

    /// Answers with `replies` in order; a request beyond them fails.
    init(_ replies: [Reply]) {
        state = Mutex(State(replies: replies))
        handler = nil
    }

    /// Answers every request with `handler`.
    init(handler: @escaping @Sendable (FeedRequest) -> Reply) {
        state = Mutex(State(replies: []))
        self.handler = handler
    }

    var requests: [FeedRequest] { state.withLock { $0.requests } }

    /// Adds replies to the end of the script.
    func enqueue(_ replies: Reply...) {
        state.withLock { $0.replies += replies }
    }

    func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let reply: Reply? = state.withLock { state in
            state.requests.append(request)
            if let handler { return handler(request) }
            return state.replies.isEmpty ? nil : state.replies.removeFirst()
        }
        switch reply {
        case .response(let response): return response
        case .failure(let error): throw error
        case nil: throw ScriptExhausted(path: request.path)
        }
    }
}

struct ScriptExhausted: Error, CustomStringConvertible {
    var path: String
    var description: String { "no scripted reply left for \(path)" }
}
