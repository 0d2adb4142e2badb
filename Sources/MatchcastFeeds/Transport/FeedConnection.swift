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
        let deadline: NIODeadline
        var answer: FeedAnswer
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

    /// When the exchange under way must have ended; nil when there is none.
    var deadline: NIODeadline? { exchange?.deadline }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Sends `head` (a GET without a body); `completion` gets the answer of at most `limit` body bytes, once.
    /// `deadline` is the pool's to keep (`fail`).
    func send(_ head: HTTPRequestHead, limit: Int, path: String, deadline: NIODeadline,
              completion: @escaping (Result<FeedResponse, any Error>) -> Void) {
        channel.eventLoop.assertInEventLoop()
        guard let context, exchange == nil, channel.isActive else {
            completion(.failure(ClosedBeforeAnswer()))
            return
        }
        exchange = Exchange(completion: completion, deadline: deadline, answer: FeedAnswer(limit: limit, path: path))
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
        guard exchange != nil else {
            context.close(promise: nil)
            return
        }
        do {
            switch unwrapInboundIn(data) {
            case .head(let head):
                try exchange!.answer.receive(head)
                exchange!.keepAlive = head.isKeepAlive
            case .body(var part):
                try exchange!.answer.receive(&part)
            case .end:
                end(context: context)
            }
        } catch {
            fail(error)
        }
    }

    private func end(context: ChannelHandlerContext) {
        guard let current = exchange.take() else { return }
        guard let answer = current.answer.complete else {
            context.close(promise: nil)
            current.completion(.failure(ClosedBeforeAnswer()))
            return
        }
        served += 1
        idleSince = .now()
        // The answer first: the connection may carry the next request as soon as it is handed on (the pool takes
        // back only a connection still open).
        current.completion(.success(answer))
        if current.keepAlive {
            reusable(self)
        } else {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let exchange = exchange.take() {
            // On a connection that served before, an error before any answer is most likely the server's close.
            exchange.completion(.failure(exchange.answer.response == nil && served > 0 ? ClosedBeforeAnswer() : error))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange = exchange.take() {
            exchange.completion(.failure(exchange.answer.response == nil ? ClosedBeforeAnswer() : ClosedMidAnswer()))
        }
        context.fireChannelInactive()
    }
}
