import AsyncHTTPClient
import NIOCore

/// Runs `body` with a fresh `HTTPClient` (`connect` to connect, `read` to read an answer), then shuts the client down
/// and calls `stop` (the fake server the test talked to), whether `body` returned or threw.
func withTestHTTPClient<T>(
    connect: TimeAmount = .seconds(10), read: TimeAmount, stopping stop: () async -> Void = {},
    _ body: (HTTPClient) async throws -> T
) async throws -> T {
    var configuration = HTTPClient.Configuration()
    configuration.timeout = .init(connect: connect, read: read)
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    do {
        let value = try await body(client)
        try await client.shutdown()
        await stop()
        return value
    } catch {
        try? await client.shutdown()
        await stop()
        throw error
    }
}
