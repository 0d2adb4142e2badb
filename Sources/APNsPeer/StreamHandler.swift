import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request stream (a child channel of NIOHTTP2's multiplexer): collects the request's headers
/// and body, checks its shape, and answers, resets or holds it.
final class StreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let state: PeerState
    private let connection: PeerConnection
    private var streamID = 0
    private var headers = HPACKHeaders()
    private var body: [UInt8] = []
    private var done = false

    init(state: PeerState, connection: PeerConnection) {
        self.state = state
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)).map { Int($0) } ?? 0
        state.streamOpened(on: connection, stream: streamID)
        let connection = connection
        let stream = streamID
        context.channel.closeFuture.whenComplete { _ in connection.closed(stream) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            headers = frame.headers
            if frame.endStream { requestEnded(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data, body.count <= APNsPeer.maxBody {
                body.append(contentsOf: buffer.readableBytesView)
            }
            if frame.endStream { requestEnded(context: context) }
        default:
            break
        }
    }

    private func requestEnded(context: ChannelHandlerContext) {
        done = true
        let request = APNsPeer.Request(headers: headers, body: body, connection: connection.number, stream: streamID)
        state.answer(request, on: context.eventLoop, respond: NIOLoopBound({ answer in
            self.respond(answer, to: request, context: context)
        }, eventLoop: context.eventLoop))
    }

    private func respond(_ answer: APNsPeer.Answer, to request: APNsPeer.Request, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }  // closed meanwhile (GOAWAY, the client went away)
        let (status, payloads) = answer.payloads(to: request, filler: state.configuration.fillerHeaderBytes,
                                                 allocator: context.channel.allocator)
        for payload in payloads { context.write(wrapOutboundOut(payload), promise: nil) }
        context.flush()
        state.settled(request, status: status)
    }
}
