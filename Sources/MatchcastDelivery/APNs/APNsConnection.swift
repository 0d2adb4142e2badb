import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// One HTTP/2 connection to APNs, driven at the frame level: no child channel per stream, so a
/// request costs two frame writes and a dictionary entry.
///
/// Pipeline: TLS (ALPN `h2`) → `NIOHTTP2Handler` (client) → this handler. It is ready once the
/// server's first SETTINGS arrived; from then on it keeps up to `min(SETTINGS_MAX_CONCURRENT_STREAMS,
/// maxStreamsPerConnection)` requests in flight, pulling more from the pool after each read that
/// completed some. Answers are assembled from every DATA frame of their stream, and the
/// connection's receive window is handed back as it is consumed (without that, a burst of error
/// answers would starve the connection).
final class APNsConnection: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What the pool keeps of a connection: how to wake or close it from any thread.
    struct Reference: Sendable {
        let eventLoop: any EventLoop
        let handler: NIOLoopBound<APNsConnection>

        func wake() {
            let handler = handler
            eventLoop.execute { handler.value.pull() }
        }

        func close() {
            let handler = handler
            eventLoop.execute { handler.value.close() }
        }
    }

    private enum Phase {
        case settingUp
        case ready
        case draining
        case closed
    }

    private struct InFlight {
        var item: APNsConnectionPool.Pending
        var sentAt: NIODeadline
        var status: Int?
        var retryAfter: String?
        var body: [UInt8] = []
    }

    /// More than any APNs answer holds; a longer body is cut, not buffered.
    static let maxBodyBytes = 64 << 10

    let id: Int
    private let pool: APNsConnectionPool
    private let eventLoop: any EventLoop
    private var context: ChannelHandlerContext?
    private var phase = Phase.settingUp
    private var setupReported = false
    private var setupFailure: (kind: String, message: String)?
    private var maxInFlight = 0
    private var nextStreamID: Int32 = 1
    private var streams: [Int32: InFlight] = [:]
    private var lastRead = NIODeadline.now()
    private var answeredInRead = false
    private var unacknowledgedBytes = 0
    private var timer: RepeatedTask?

    private init(id: Int, pool: APNsConnectionPool, eventLoop: any EventLoop) {
        self.id = id
        self.pool = pool
        self.eventLoop = eventLoop
    }

    /// Starts setting up connection `id` on `eventLoop`; the outcome reaches the pool.
    static func open(id: Int, pool: APNsConnectionPool, on eventLoop: any EventLoop) {
        eventLoop.execute {
            let handler = NIOLoopBound(APNsConnection(id: id, pool: pool, eventLoop: eventLoop), eventLoop: eventLoop)
            let settings = pool.settings
            let serverName = settings.host.isIPAddress ? nil : settings.host
            let sslContext = pool.sslContext
            let bootstrap = ClientBootstrap(group: eventLoop)
                .connectTimeout(settings.connectTimeout)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: serverName)
                        // Header-block validation is off: our own headers are fixed and well formed, and of
                        // the answers only `:status`, `retry-after` and the body are read.
                        let http2 = NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: [
                                HTTP2Setting(parameter: .enablePush, value: 0),
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                            ],
                            headerBlockValidation: .disabled, contentLengthValidation: .disabled)
                        try channel.pipeline.syncOperations.addHandlers([tls, http2, handler.value])
                    }
                }
            // The whole set-up (TCP, TLS, the server's SETTINGS) has one deadline.
            let deadline = eventLoop.scheduleTask(in: settings.connectTimeout) {
                handler.value.setupTimedOut()
            }
            bootstrap.connect(host: settings.host, port: settings.port).whenComplete { result in
                if case .failure(let error) = result {
                    deadline.cancel()
                    handler.value.connectFailed("cannot connect to \(settings.authority): \(error)")
                } else {
                    handler.value.setupDeadline = deadline
                }
            }
        }
    }

    private var setupDeadline: Scheduled<Void>?

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelInactive(context: ChannelHandlerContext) {
        let wasSettingUp = phase == .settingUp
        phase = .closed
        timer?.cancel()
        timer = nil
        setupDeadline?.cancel()
        let unanswered = streams.values.map(\.item)
        streams.removeAll()
        if wasSettingUp {
            reportSetupFailure(
                kind: setupFailure?.kind ?? "connect",
                message: setupFailure?.message ?? "the server closed the connection during set-up")
            // Nothing can have been written before the connection was ready.
        } else {
            pool.connectionClosed(id: id, unanswered: unanswered)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            let streamID = Int32(streamError.streamID)
            if let stream = streams.removeValue(forKey: streamID) {
                stream.item.job.complete(stream.item.index, with: .failed(APNsTransportError(
                    kind: .streamReset, message: "stream error: \(streamError.baseError)")))
                answeredInRead = true
            }
            return
        }
        if phase == .settingUp {
            if setupFailure == nil {
                let isTLS = String(reflecting: type(of: error)).contains("SSL")
                setupFailure = (isTLS ? "tls" : "connect", (isTLS ? "TLS handshake failed: " : "") + "\(error)")
            }
        } else if phase != .closed {
            pool.connectionBroke(id: id, kind: "protocol", message: "connection error: \(error)")
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
            setupFailure = ("tls", "the server did not negotiate HTTP/2 (ALPN h2; got \(negotiated ?? "none"))")
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = Int32(frame.streamID)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                maxInFlight = min(setting.value, pool.settings.maxStreamsPerConnection)
            }
            if phase == .settingUp {
                if !settings.contains(where: { $0.parameter == .maxConcurrentStreams }) {
                    // No limit advertised: HTTP/2 means "unlimited"; our own cap applies.
                    maxInFlight = pool.settings.maxStreamsPerConnection
                }
                becomeReady(context: context)
            }
        case .headers(let headers):
            guard var stream = streams[streamID] else { return }
            if stream.status == nil, let status = headers.headers.first(name: ":status").flatMap(Int.init), status >= 200 {
                stream.status = status
                stream.retryAfter = headers.headers.first(name: "retry-after")
            }
            if headers.endStream {
                streams[streamID] = nil
                finish(stream)
            } else {
                streams[streamID] = stream
            }
        case .data(let data):
            let length = data.data.readableBytes + (data.paddingBytes ?? 0)
            unacknowledgedBytes += length
            guard var stream = streams[streamID] else { return }
            if case .byteBuffer(let buffer) = data.data, stream.body.count < Self.maxBodyBytes {
                stream.body.append(contentsOf: buffer.readableBytesView.prefix(Self.maxBodyBytes - stream.body.count))
            }
            if data.endStream {
                streams[streamID] = nil
                finish(stream)
            } else {
                streams[streamID] = stream
            }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: streamID) else { return }
            answeredInRead = true
            if code == .refusedStream {
                // Not processed (RFC 9113 §8.7): safe to send again.
                pool.resend([stream.item], from: id)
            } else {
                stream.item.job.complete(stream.item.index, with: .failed(APNsTransportError(
                    kind: .streamReset, message: "the server reset the stream (\(code))")))
            }
        case .goAway(let lastStreamID, let code, _):
            let last = Int32(lastStreamID)
            if phase == .ready {
                phase = .draining
                pool.connectionDraining(id: id)
            }
            // Streams above the last one the server processed were not processed: send them again.
            let dropped = streams.filter { $0.key > last }
            for key in dropped.keys { streams[key] = nil }
            pool.resend(dropped.values.map(\.item), from: id)
            if code != .noError {
                pool.connectionBroke(id: id, kind: "goaway", message: "the server sent GOAWAY (\(code))")
            }
            if streams.isEmpty { context.close(promise: nil) }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        lastRead = .now()
        // Hand the connection window back once half of the initial 64 KiB is used.
        var wrote = false
        if unacknowledgedBytes >= 32 << 10 {
            context.write(wrapOutboundOut(HTTP2Frame(
                streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))), promise: nil)
            unacknowledgedBytes = 0
            wrote = true
        }
        if answeredInRead, phase == .ready {
            answeredInRead = false
            if pull() { wrote = false }
        }
        if wrote { context.flush() }
        if phase == .draining, streams.isEmpty { context.close(promise: nil) }
        context.fireChannelReadComplete()
    }

    // MARK: - Sending

    /// Writes as many queued requests as there are free streams; true when it wrote (and flushed).
    @discardableResult
    func pull() -> Bool {
        guard phase == .ready, let context else { return false }
        let free = maxInFlight - streams.count
        guard free > 0 else { return false }
        // Stream ids are 31 bits: a connection near the end of them drains and a new one takes over.
        guard nextStreamID < Int32.max - 2 * Int32(free) else {
            phase = .draining
            pool.connectionDraining(id: id)
            if streams.isEmpty { context.close(promise: nil) }
            return false
        }
        let items = pool.take(for: id, max: free)
        guard !items.isEmpty else { return false }
        let now = NIODeadline.now()
        let authority = pool.settings.authority
        for item in items {
            let request = item.request
            let streamID = nextStreamID
            nextStreamID += 2
            var headers = HPACKHeaders()
            headers.reserveCapacity(5 + request.head.fields.count)
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
            headers.add(name: ":authority", value: authority)
            for field in request.head.fields { headers.add(name: field.name, value: field.value) }
            headers.add(name: "apns-id", value: request.apnsID, indexing: .nonIndexable)
            streams[streamID] = InFlight(item: item, sentAt: now)
            let id = HTTP2StreamID(streamID)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
                promise: nil)
        }
        context.flush()
        return true
    }

    func close() {
        guard phase != .closed, let context else { return }
        context.close(promise: nil)
    }

    // MARK: - Private

    private func becomeReady(context: ChannelHandlerContext) {
        setupDeadline?.cancel()
        setupDeadline = nil
        phase = .ready
        lastRead = .now()
        setupReported = true
        pool.connectionReady(id: id, connection: Reference(eventLoop: eventLoop, handler: NIOLoopBound(self, eventLoop: eventLoop)))
        let timeout = pool.settings.requestTimeout
        let tick = TimeAmount.nanoseconds(min(max(timeout.nanoseconds / 4, 5_000_000), 250_000_000))
        let handler = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in
            handler.value.expireRequests()
        }
        pull()
    }

    private func finish(_ stream: InFlight) {
        answeredInRead = true
        guard let status = stream.status else {
            stream.item.job.complete(stream.item.index, with: .failed(APNsTransportError(
                kind: .streamReset, message: "the stream ended without a status")))
            return
        }
        stream.item.job.complete(
            stream.item.index, with: .answered(APNsResponse(status: status, retryAfter: stream.retryAfter, body: stream.body)))
    }

    /// Fails requests written more than `requestTimeout` ago. If nothing at all was read since the
    /// oldest of them was written, the connection has stopped answering: it is reported and closed
    /// (its other requests are then sent once more on another connection).
    private func expireRequests() {
        guard phase == .ready || phase == .draining, let context else { return }
        let now = NIODeadline.now()
        let timeout = pool.settings.requestTimeout
        var expired: [(Int32, InFlight)] = []
        for (streamID, stream) in streams where stream.sentAt + timeout <= now {
            expired.append((streamID, stream))
        }
        guard !expired.isEmpty else { return }
        let oldest = expired.map(\.1.sentAt).min()!
        // Nothing at all read since the oldest of them was written: the connection stopped answering.
        // Reported before the requests fail, so whoever sees the failure also sees the report.
        let stalled = lastRead < oldest
        if stalled {
            pool.connectionBroke(
                id: id, kind: "stalled",
                message: "the connection stopped answering (nothing read for \(timeout.nanoseconds / 1_000_000) ms)")
            phase = .draining
            pool.connectionDraining(id: id)
        }
        for (streamID, stream) in expired {
            streams[streamID] = nil
            context.write(wrapOutboundOut(HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .rstStream(.cancel))), promise: nil)
            stream.item.job.complete(stream.item.index, with: .failed(APNsTransportError(
                kind: .timeout, message: "no answer within \(timeout.nanoseconds / 1_000_000) ms")))
        }
        context.flush()
        if stalled {
            context.close(promise: nil)
        } else {
            pull()
        }
    }

    private func setupTimedOut() {
        guard phase == .settingUp else { return }
        setupFailure = ("connect_timeout", "connection set-up (TCP, TLS, HTTP/2 settings) took over \(pool.settings.connectTimeout.nanoseconds / 1_000_000) ms")
        if let context {
            context.close(promise: nil)
        } else {
            reportSetupFailure(kind: "connect_timeout", message: setupFailure!.message)
        }
    }

    fileprivate func connectFailed(_ message: String) {
        reportSetupFailure(kind: setupFailure?.kind ?? "connect", message: setupFailure?.message ?? message)
    }

    fileprivate func reportSetupFailure(kind: String, message: String) {
        guard !setupReported else { return }
        setupReported = true
        phase = .closed
        pool.connectFailed(id: id, kind: kind, message: message)
    }
}

extension String {
    /// A dotted IPv4 or a colon-bearing IPv6 literal: no SNI for those.
    fileprivate var isIPAddress: Bool {
        contains(":") || (!isEmpty && allSatisfy { $0 == "." || $0.isNumber })
    }
}
