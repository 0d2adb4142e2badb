import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Serves a `FakeFeed` over HTTP: the same paths, statuses, headers and bodies as
/// `FakeFeed.response(to:elapsed:)`, with elapsed time read from a `ContinuousClock`
/// since the application was made (the `fake-feed` command runs it at once), or from `elapsed` when given.
public enum FakeFeedServer {
    /// An application serving `feed` on `host:port` (port 0 picks a free one; `onServerRunning`
    /// receives the listening channel, whose `localAddress` tells which). `elapsed`, asked once per request, is the
    /// real time the feed has run: a test that steps it per request gets the same answers however slowly it polls.
    public static func makeApplication(
        feed: FakeFeed,
        host: String = "127.0.0.1",
        port: Int,
        logger: Logger? = nil,
        elapsed: (@Sendable () -> Duration)? = nil,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let start = ContinuousClock.now
        let elapsed = elapsed ?? { start.duration(to: .now) }
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            guard request.method == .get else {
                return Response(status: .methodNotAllowed, headers: [.allow: "GET"])
            }
            let answer = feed.response(to: feedRequest(request), elapsed: elapsed())
            return response(answer)
        }
        return Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "matchcast-fake-feed"),
            onServerRunning: onServerRunning,
            logger: logger ?? Logger(label: "matchcast.fake-feed"))
    }

    /// The request as the feed sees it: path with query, header names lower-cased.
    static func feedRequest(_ request: Request) -> FeedRequest {
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            // Repeated headers combine as a list (RFC 9110 §5.3), which is how If-None-Match reads them.
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        let path = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        return FeedRequest(path: path, headers: headers)
    }

    static func response(_ answer: FeedResponse) -> Response {
        var fields = HTTPFields()
        for (name, value) in answer.headers.sorted(by: { $0.key < $1.key }) {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        let status = HTTPResponse.Status(code: answer.status)
        guard let body = answer.body else {
            return Response(status: status, headers: fields)
        }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
