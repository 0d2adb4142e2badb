import NIOCore
import NIOHPACK
import NIOHTTP2

/// The frame-level server (`Configuration.frameLevel`): every stream of a connection handled on the connection
/// itself, from NIOHTTP2Handler's frames, with no child channel per stream. What a request costs is then what
/// NIOHTTP2 spends framing, HPACK and its state machine, not a channel and pipeline made and torn down per request;
/// a benchmark's fake can answer several times faster than serve sends. Answers written while a read is handled go
/// out together when it completes.
///
/// Flow control is this handler's own (NIOHTTP2Handler leaves it to the multiplexer, absent here): what a DATA frame
/// used of its stream's window is handed back at once while the stream may send more (so a window smaller than a
/// body, or one made smaller by a SETTINGS change, never stalls a request), and the connection's once half of its
/// target is used.
final class FrameHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var headers = HPACKHeaders()
        var body: [UInt8] = []
    }

    private let state: PeerState
    private let connection: PeerConnection
    private var streams: [HTTP2StreamID: Stream] = [:]
    /// DATA bytes not yet handed back to the client's window for the connection.
    private var connectionUnacknowledged = 0
    private var reading = false
    private var flushPending = false

    init(state: PeerState, connection: PeerConnection) {
        self.state = state
        self.connection = connection
    }

    func channelActive(context: ChannelHandlerContext) {
        // The connection window starts at the protocol's 65,535; a larger target is announced at once.
        let extra = state.configuration.connectionWindow - 65_535
        if extra > 0 {
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: extra))),
                                  promise: nil)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if streams[id] == nil {
                streams[id] = Stream()
                state.streamOpened(on: connection, stream: Int(id))
            }
            streams[id]?.headers = headers.headers
            if headers.endStream { requestEnded(id, context: context) }
        case .data(let data):
            guard streams[id] != nil else { return }
            if case .byteBuffer(let buffer) = data.data, (streams[id]?.body.count ?? 0) <= APNsPeer.maxBody {
                streams[id]?.body.append(contentsOf: buffer.readableBytesView)
            }
            // What the frame used of the windows: its data, and its padding with the padding's length byte.
            let used = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            consumed(used, on: id, ended: data.endStream, context: context)
            if data.endStream { requestEnded(id, context: context) }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent {
            streams[closed.streamID] = nil
            connection.closed(Int(closed.streamID))
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Internals

    /// Hands window back for DATA read: the connection's, and the stream's while it may still send.
    private func consumed(_ bytes: Int, on id: HTTP2StreamID, ended: Bool, context: ChannelHandlerContext) {
        guard bytes > 0 else { return }
        connectionUnacknowledged += bytes
        if connectionUnacknowledged * 2 >= max(state.configuration.connectionWindow, 65_535) {
            write(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connectionUnacknowledged)),
                  context: context)
            connectionUnacknowledged = 0
        }
        guard !ended else { return }
        write(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: bytes)), context: context)
    }

    private func requestEnded(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let stream = streams[id] else { return }
        let request = APNsPeer.Request(headers: stream.headers, body: stream.body, connection: connection.number,
                                       stream: Int(id))
        state.answer(request, on: context.eventLoop, respond: NIOLoopBound({ answer in
            self.respond(answer, to: request, on: id, context: context)
            // A held answer, let go outside a read: no read completes to flush it.
            if !self.reading { context.flush() }
        }, eventLoop: context.eventLoop))
    }

    private func respond(_ answer: APNsPeer.Answer, to request: APNsPeer.Request, on id: HTTP2StreamID,
                         context: ChannelHandlerContext) {
        guard context.channel.isActive, streams[id] != nil else { return }  // closed meanwhile (GOAWAY, a reset)
        let (status, payloads) = answer.payloads(to: request, filler: state.configuration.fillerHeaderBytes,
                                                 allocator: context.channel.allocator)
        for payload in payloads { write(HTTP2Frame(streamID: id, payload: payload), context: context) }
        state.settled(request, status: status)
    }

    /// Written now, flushed when the read that caused it completes.
    private func write(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(frame), promise: nil)
        flushPending = true
    }
}
