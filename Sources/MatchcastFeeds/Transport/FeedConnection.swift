import Foundation
import NIOCore
import NIOHTTP1

/// One keep-alive HTTP/1.1 connection to a feed host, carrying one exchange at a time (`FeedConnectionPool`).
///
/// Confined to its channel's event loop: `send` and every callback run there, which is what makes the unguarded state
/// safe. An exchange ends exactly once: with the answer, or with an error when the answer is too large, the
/// connection fails or closes first, or `fail` is called (deadline, cancellation).
final class FeedConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    /// The exchange under way.
    private struct Exchange {
        let completion: (Result<FeedResponse, any Error>) -> Void
        let limit: Int
        let path: String
        /// The head, once it came; the body collected so far.
        var answer: FeedResponse?
        var body: ByteBuffer?
        var keepAlive = true
    }

    /// The connection closed before any byte of the answer came: on a connection that had served before, the server
    /// most likely closed it as idle while the request was on its way, and the request may go again on another.
    struct ClosedBeforeAnswer: Error, CustomStringConvertible {
        var description: String { "the connection closed before an answer" }
    }

    /// The connection closed after the head of the answer and before its end.
    struct ClosedMidAnswer: Error, CustomStringConvertible {
        var description: String { "the connection closed in the middle of the answer" }
    }

    let channel: any Channel
    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    /// Exchanges this connection carried to their end.
    private(set) var served = 0
    /// When the last exchange ended (`NIODeadline` uptime), for the pool's idle limit.
    private(set) var idleSince = NIODeadline.now()
    /// Called on the loop when an exchange ended and the connection can carry another.
    private let reusable: (FeedConnection) -> Void

    init(channel: any Channel, reusable: @escaping (FeedConnection) -> Void) {
        self.channel = channel
        self.reusable = reusable
    }

    var isBusy: Bool { exchange != nil }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Sends `head` (a GET without a body); `completion` gets the answer of at most `limit` body bytes, once.
    func send(_ head: HTTPRequestHead, limit: Int, path: String,
              completion: @escaping (Result<FeedResponse, any Error>) -> Void) {
        channel.eventLoop.assertInEventLoop()
        guard let context, exchange == nil, channel.isActive else {
            completion(.failure(ClosedBeforeAnswer()))
            return
        }
        exchange = Exchange(completion: completion, limit: limit, path: path)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Ends the exchange under way with `error` and closes the connection.
    func fail(_ error: any Error) {
        channel.eventLoop.assertInEventLoop()
        guard let exchange = exchange.take() else { return }
        channel.close(promise: nil)
        exchange.completion(.failure(error))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard var current = exchange else {
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > current.limit {
                fail(FeedError.tooLarge(limit: current.limit, path: current.path))
                return
            }
            var headers: [String: String] = [:]
            for (name, value) in head.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            current.answer = FeedResponse(status: Int(head.status.code), headers: headers, body: nil)
            current.keepAlive = head.isKeepAlive
            exchange = current
        case .body(var part):
            guard (current.body?.readableBytes ?? 0) + part.readableBytes <= current.limit else {
                fail(FeedError.tooLarge(limit: current.limit, path: current.path))
                return
            }
            // The exchange is taken out while its body grows, so that the buffer is not copied on write.
            exchange = nil
            if current.body == nil {
                current.body = part
            } else {
                current.body!.writeBuffer(&part)
            }
            exchange = current
        case .end:
            exchange = nil
            guard var answer = current.answer else {
                context.close(promise: nil)
                current.completion(.failure(ClosedBeforeAnswer()))
                return
            }
            if let body = current.body, body.readableBytes > 0 { answer.body = Data(body.readableBytesView) }
            served += 1
            idleSince = .now()
            // The answer first: the connection may carry the next request as soon as it is handed on.
            current.completion(.success(answer))
            if current.keepAlive, context.channel.isActive {
                reusable(self)
            } else {
                context.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let exchange = exchange.take() {
            // On a connection that served before, an error before any answer is most likely the server's close.
            exchange.completion(.failure(exchange.answer == nil && served > 0 ? ClosedBeforeAnswer() : error))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange = exchange.take() {
            exchange.completion(.failure(exchange.answer == nil ? ClosedBeforeAnswer() : ClosedMidAnswer()))
        }
        context.fireChannelInactive()
    }
}

extension Optional {
    /// The value, leaving nil in its place.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
