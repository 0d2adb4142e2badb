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
            if case .byteBuffer(let buffer) = frame.data, body.count <= Self.maxBody {
                body.append(contentsOf: buffer.readableBytesView)
            }
            if frame.endStream { requestEnded(context: context) }
        default:
            break
        }
    }

    /// Bodies beyond this are not kept (APNs takes 4 KB; the check below refuses more).
    static let maxBody = 64 << 10

    private func requestEnded(context: ChannelHandlerContext) {
        done = true
        let request = APNsPeer.Request(headers: headers, body: body, connection: connection.number, stream: streamID)
        state.answer(request, on: context.eventLoop, respond: NIOLoopBound({ answer in
            self.respond(answer, to: request, context: context)
        }, eventLoop: context.eventLoop))
    }

    /// APNs' own refusals for a request of the wrong shape (checked here, independently of the client).
    static func shapeProblem(_ request: APNsPeer.Request) -> APNsPeer.Answer? {
        guard request.method == "POST" else { return .error(status: 405, reason: "MethodNotAllowed") }
        guard let token = request.token, !token.isEmpty, token.utf8.allSatisfy({ $0 < 128 && isHexDigit($0) }) else {
            return .error(status: 400, reason: "BadDeviceToken")
        }
        guard let authorization = request.authorization, authorization.hasPrefix("bearer ") else {
            return .error(status: 403, reason: "MissingProviderToken")
        }
        guard request.topic?.isEmpty == false else { return .error(status: 400, reason: "MissingTopic") }
        guard request.pushType != nil else { return .error(status: 400, reason: "InvalidPushType") }
        guard !request.body.isEmpty else { return .error(status: 400, reason: "PayloadEmpty") }
        guard request.body.count <= 4096 else { return .error(status: 413, reason: "PayloadTooLarge") }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...102).contains(byte) || (65...70).contains(byte)
    }

    private func respond(_ answer: APNsPeer.Answer, to request: APNsPeer.Request, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }  // closed meanwhile (GOAWAY, the client went away)
        switch Self.frames(for: answer, to: request, filler: state.configuration.fillerHeaderBytes,
                           allocator: context.channel.allocator) {
        case .reset(let code):
            state.reset()
            context.writeAndFlush(wrapOutboundOut(.rstStream(code)), promise: nil)
        case .answer(let status, let headers, let body):
            if let body {
                context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
            } else {
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
            }
            state.answered(request, status: status)
        }
    }

    /// What answering a request sends: a reset, or a status's header block and, for an error, its JSON body.
    enum Frames {
        case reset(HTTP2ErrorCode)
        case answer(status: Int, headers: HPACKHeaders, body: ByteBuffer?)
    }

    static func frames(for answer: APNsPeer.Answer, to request: APNsPeer.Request, filler: Int,
                       allocator: ByteBufferAllocator) -> Frames {
        var fields = HPACKHeaders()
        let status: Int
        switch answer {
        case .reset(let code):
            return .reset(HTTP2ErrorCode(networkCode: code))
        case .ok:
            status = 200
        case .error(let code, _):
            status = code
        }
        fields.add(name: ":status", value: String(status))
        fields.add(name: "apns-id", value: request.apnsID ?? "00000000-0000-0000-0000-000000000000")
        if filler > 0 {
            fields.add(name: "x-filler", value: String((0..<filler).map { _ in alphabet.randomElement()! }))
        }
        guard case .error(_, let reason) = answer else { return .answer(status: status, headers: fields, body: nil) }
        fields.add(name: "content-type", value: "application/json")
        var buffer = allocator.buffer(capacity: 32 + reason.utf8.count)
        buffer.writeString(#"{"reason":"\#(reason)"}"#)
        return .answer(status: status, headers: fields, body: buffer)
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
}
