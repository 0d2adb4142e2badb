import Foundation
import Synchronization

/// Passes requests to another transport and writes every answer as a recording line
/// (docs/formats.md, "Recording"), `t` measured on the given clock from when the transport was made.
public final class RecordingTransport<C: Clock<Duration>>: FeedTransport, Sendable {
    private let upstream: any FeedTransport
    private let clock: C
    private let start: C.Instant
    private let writer: Mutex<RecordingWriter>

    public init(upstream: any FeedTransport, writer: sending RecordingWriter, clock: C) {
        self.upstream = upstream
        self.clock = clock
        start = clock.now
        self.writer = Mutex(writer)
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        let response = try await upstream.fetch(request)
        // 304s are recorded without a body, as the contract says.
        let recorded = FeedResponse(status: response.status, headers: response.headers,
                                    body: response.status == 304 ? nil : response.body)
        // Timed under the lock, so answers landing together are still written in time order.
        try writer.withLock { writer in
            let t = (start.duration(to: clock.now)).seconds
            try writer.append(RecordingLine(t: (t * 1000).rounded() / 1000, request: request.path, response: recorded))
        }
        return response
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
