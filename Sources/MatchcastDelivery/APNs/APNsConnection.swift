import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import NIOTLS

/// One HTTP/2 connection to APNs, framed by hand on top of TLS: no HTTP/2 state machine per
/// stream, no child channels. A request costs one HEADERS frame (a header block built from
/// pre-encoded bytes: static-table indexes for `:method`/`:scheme`, literals without indexing for
/// `:authority`, `:path`, `apns-id` and the shared fields) and one DATA frame with the shared
/// payload bytes, all of a burst in one buffer and one flush.
///
/// Pipeline: TLS (ALPN `h2`) → this handler. It is ready once the server's first SETTINGS arrived;
/// from then on it keeps up to `min(SETTINGS_MAX_CONCURRENT_STREAMS, maxStreamsPerConnection)`
/// requests in flight, pulling more from the pool after each read that completed some. Of what
/// the server sends it reads SETTINGS (acknowledged), PING (answered), WINDOW_UPDATE, GOAWAY,
/// RST_STREAM, HEADERS/CONTINUATION (decoded with NIOHPACK, so the decoder's dynamic table stays
/// in step) and DATA. Flow control both ways: DATA is sent only within the server's connection and
/// stream windows (the rest waits for WINDOW_UPDATE), and the receive window is handed back as
/// answers consume it, so a burst of error bodies never stalls the connection.
final class APNsConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What the pool keeps of a connection: how to wake or close it from any thread.
    struct Reference: Sendable {
        let eventLoop: any EventLoop
        let handler: NIOLoopBound<APNsConnection>

        func wake() {
            let handler = handler
            eventLoop.execute { handler.value.wake() }
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
        /// What the server's stream window still allows us to send.
        var sendWindow: Int
        /// Body bytes not yet sent (flow control held them back).
        var unsent: ByteBuffer?
        var status: Int?
        var retryAfter: String?
        var headers = HPACKHeaders()
        var body: [UInt8] = []
    }

    /// More than any APNs answer holds; a longer body is cut, not buffered.
    static let maxBodyBytes = 64 << 10
    /// The stream window we advertise; answers are far smaller, so streams never need a WINDOW_UPDATE.
    static let streamReceiveWindow = 1 << 20
    /// Frames we accept (our SETTINGS_MAX_FRAME_SIZE is the default).
    static let maxInboundFrame = HTTP2Wire.defaultMaxFrameSize

    let id: Int
    private let pool: APNsConnectionPool
    private let eventLoop: any EventLoop
    private var context: ChannelHandlerContext?
    private var phase = Phase.settingUp
    private var setupReported = false
    private var setupFailure: (kind: String, message: String)?
    private var setupDeadline: Scheduled<Void>?
    private var maxInFlight = 0
    private var nextStreamID: Int32 = 1
    private var streams: [Int32: InFlight] = [:]
    private var lastRead = NIODeadline.now()
    private var answeredInRead = false
    private var timer: RepeatedTask?
    /// The most requests in flight so far (told to the pool when it grows).
    private var peakInFlight = 0

    // Framing state.
    private var inbound = HTTP2Wire.FrameReader()
    private var output: ByteBuffer?
    private var scratch = ByteBuffer()
    private var headerBlocks = HTTP2Wire.HeaderBlockReader()
    private var connectionSendWindow = HTTP2Wire.defaultWindow
    private var peerInitialWindow = HTTP2Wire.defaultWindow
    private var peerMaxFrameSize = HTTP2Wire.defaultMaxFrameSize
    /// Streams with body bytes held back by flow control, oldest first.
    private var blocked: [Int32] = []
    private var unacknowledgedBytes = 0
    /// Results of this event, handed to their jobs in one go.
    private var completions: [(APNsConnectionPool.Pending, APNsExchange)] = []
    /// `:method POST`, `:scheme https`, `:authority`: the start of every push's header block.
    private let postPrefix: ByteBuffer
    private let authorityField: ByteBuffer

    private init(id: Int, pool: APNsConnectionPool, eventLoop: any EventLoop) {
        self.id = id
        self.pool = pool
        self.eventLoop = eventLoop
        var authority = ByteBuffer()
        HTTP2Wire.writeLiteral(nameIndex: HTTP2Wire.StaticName.authority, value: pool.settings.authority.utf8, into: &authority)
        authorityField = authority
        var prefix = ByteBuffer()
        HTTP2Wire.writeIndexed(HTTP2Wire.StaticEntry.methodPOST, into: &prefix)
        HTTP2Wire.writeIndexed(HTTP2Wire.StaticEntry.schemeHTTPS, into: &prefix)
        prefix.writeImmutableBuffer(authority)
        postPrefix = prefix
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
                        try channel.pipeline.syncOperations.addHandlers([tls, handler.value])
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

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        scratch = context.channel.allocator.buffer(capacity: 1024)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let wasSettingUp = phase == .settingUp
        phase = .closed
        timer?.cancel()
        timer = nil
        setupDeadline?.cancel()
        deliverCompletions()
        let unanswered = streams.values.map(\.item)
        streams.removeAll()
        blocked.removeAll()
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
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            if negotiated != "h2" {
                setupFailure = ("tls", "the server did not negotiate HTTP/2 (ALPN h2; got \(negotiated ?? "none"))")
                context.close(promise: nil)
            } else {
                // The connection preface: the magic, then our SETTINGS. The connection receive window
                // stays at its default 64 KiB and is handed back as it is used.
                var buffer = context.channel.allocator.buffer(capacity: 64)
                buffer.writeBytes(HTTP2Wire.preface)
                HTTP2Wire.writeSettings(into: &buffer, [
                    (.enablePush, 0), (.maxConcurrentStreams, 100), (.initialWindowSize, Self.streamReceiveWindow),
                ])
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard phase != .closed else { return }
        var buffer = unwrapInboundIn(data)
        inbound.append(&buffer)
        do {
            while let frame = try inbound.next(maxFrameSize: Self.maxInboundFrame) {
                try handle(frame)
                guard phase != .closed else { return }
            }
        } catch {
            connectionError(error)
            return
        }
        inbound.endRead()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        lastRead = .now()
        // Hand the connection window back once half of the initial 64 KiB is used.
        if unacknowledgedBytes >= 32 << 10 {
            appendOutput { HTTP2Wire.writeWindowUpdate(into: &$0, stream: 0, increment: unacknowledgedBytes) }
            unacknowledgedBytes = 0
        }
        deliverCompletions()
        if answeredInRead, phase == .ready {
            answeredInRead = false
            pull()
        }
        flush()
        if phase == .draining, streams.isEmpty { context.close(promise: nil) }
        context.fireChannelReadComplete()
    }

    // MARK: - Frames from the server

    private func handle(_ frame: HTTP2Wire.Frame) throws(HTTP2Wire.WireError) {
        if headerBlocks.takes(frame) {
            if let block = try headerBlocks.read(frame) { headerBlock(block) }
            return
        }
        guard let type = HTTP2Wire.FrameType(rawValue: frame.type) else { return }  // unknown frames are ignored
        switch type {
        case .settings:
            if frame.has(HTTP2Wire.Flag.ack) { return }
            try applySettings(HTTP2Wire.settings(of: frame))
        case .headers, .continuation:
            break  // the header block reader's
        case .data:
            unacknowledgedBytes += frame.payload.readableBytes
            let payload = try HTTP2Wire.unpadded(frame)
            guard var stream = streams.removeValue(forKey: frame.streamID) else { return }
            if stream.body.count < Self.maxBodyBytes {
                stream.body.append(contentsOf: payload.readableBytesView.prefix(Self.maxBodyBytes - stream.body.count))
            }
            if frame.has(HTTP2Wire.Flag.endStream) {
                finish(stream)
            } else {
                streams[frame.streamID] = stream
            }
        case .windowUpdate:
            let increment = try HTTP2Wire.windowIncrement(of: frame)
            if frame.streamID == 0 {
                connectionSendWindow += increment
                guard connectionSendWindow <= HTTP2Wire.maxWindow else {
                    throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.flowControlError, "connection window over 2^31-1")
                }
            } else if streams[frame.streamID] != nil {
                streams[frame.streamID]!.sendWindow += increment
            }
            if !blocked.isEmpty { sendBlocked() }
        case .ping:
            appendOutput { HTTP2Wire.writePingAck(answering: frame, into: &$0) }
        case .rstStream:
            let code = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self) ?? 0
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            answeredInRead = true
            if code == HTTP2Wire.ErrorCode.refusedStream {
                // Not processed (RFC 9113 §8.7): safe to send again.
                pool.resend([stream.item], from: id)
            } else {
                completions.append((stream.item, .failed(APNsTransportError(
                    kind: .streamReset, message: "the server reset the stream (\(HTTP2Wire.ErrorCode.name(code)))"))))
            }
        case .goAway:
            var payload = frame.payload
            guard let lastRaw = payload.readInteger(as: UInt32.self), let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.frameSizeError, "a malformed GOAWAY")
            }
            goAway(last: Int32(bitPattern: lastRaw & 0x7FFF_FFFF), code: code)
        case .pushPromise:
            throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.protocolError, "PUSH_PROMISE with push disabled")
        case .priority:
            break
        }
    }

    private func applySettings(_ settings: [(UInt16, UInt32)]) throws(HTTP2Wire.WireError) {
        var advertisedLimit = false
        for (identifier, value) in settings {
            switch HTTP2Wire.Setting(rawValue: identifier) {
            case .maxConcurrentStreams:
                advertisedLimit = true
                maxInFlight = min(Int(value), pool.settings.maxStreamsPerConnection)
            case .initialWindowSize:
                guard value <= UInt32(HTTP2Wire.maxWindow) else {
                    throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1")
                }
                let delta = Int(value) - peerInitialWindow
                peerInitialWindow = Int(value)
                if delta != 0 {
                    for key in streams.keys { streams[key]!.sendWindow += delta }
                }
            case .maxFrameSize:
                guard (HTTP2Wire.defaultMaxFrameSize...(1 << 24 - 1)).contains(Int(value)) else {
                    throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.protocolError, "SETTINGS_MAX_FRAME_SIZE \(value)")
                }
                peerMaxFrameSize = Int(value)
            default:
                // HEADER_TABLE_SIZE: our header blocks never use the dynamic table. Others do not apply.
                break
            }
        }
        appendOutput { HTTP2Wire.writeSettingsAck(into: &$0) }
        if phase == .settingUp {
            // No limit advertised: HTTP/2 means "unlimited"; our own cap applies.
            if !advertisedLimit { maxInFlight = pool.settings.maxStreamsPerConnection }
            becomeReady()
        } else {
            if !blocked.isEmpty { sendBlocked() }
            answeredInRead = true  // the limit may have grown: pull at the end of this read
        }
    }

    /// An answer's headers (or trailers); a block for a stream we gave up on is dropped (it was
    /// still decoded, for the decoder's table).
    private func headerBlock(_ block: HTTP2Wire.HeaderBlockReader.Block) {
        let streamID = block.stream
        let headers = block.headers
        guard var stream = streams.removeValue(forKey: streamID) else { return }
        if stream.status == nil, let status = headers.first(name: ":status").flatMap(Int.init), status >= 200 {
            stream.status = status
            stream.retryAfter = headers.first(name: "retry-after")
            stream.headers = headers
        }
        if block.endStream {
            finish(stream)
        } else {
            streams[streamID] = stream
        }
    }

    private func goAway(last: Int32, code: UInt32) {
        if phase == .ready {
            phase = .draining
            pool.connectionDraining(id: id)
        }
        // Streams above the last one the server processed were not processed: send them again.
        let dropped = streams.filter { $0.key > last }
        for key in dropped.keys { streams[key] = nil }
        blocked.removeAll { dropped[$0] != nil }
        pool.resend(dropped.values.map(\.item), from: id)
        if code != HTTP2Wire.ErrorCode.noError {
            pool.connectionBroke(id: id, kind: "goaway", message: "the server sent GOAWAY (\(HTTP2Wire.ErrorCode.name(code)))")
        }
        if streams.isEmpty { context?.close(promise: nil) }
    }

    /// A connection error (RFC 9113 §5.4.1): GOAWAY, then close; unanswered requests are resent.
    private func connectionError(_ error: HTTP2Wire.WireError) {
        guard let context else { return }
        let last = nextStreamID - 2
        appendOutput { HTTP2Wire.writeGoAway(into: &$0, lastStream: max(0, last), code: error.code) }
        flush()
        if phase == .settingUp {
            setupFailure = setupFailure ?? ("protocol", "HTTP/2 error during set-up: \(error)")
        } else {
            pool.connectionBroke(id: id, kind: "protocol", message: "HTTP/2 error: \(error)")
        }
        context.close(promise: nil)
    }

    // MARK: - Sending

    /// Woken by the pool: requests are waiting.
    private func wake() {
        pull()
        flush()
    }

    /// Writes (into the output buffer) as many queued requests as there are free streams.
    private func pull() {
        // Held-back bodies go first (on WINDOW_UPDATE); new streams only while the connection window is open.
        guard phase == .ready, context != nil, blocked.isEmpty || connectionSendWindow > 0 else { return }
        let free = maxInFlight - streams.count
        guard free > 0 else { return }
        // Stream ids are 31 bits: a connection near the end of them drains and a new one takes over.
        guard nextStreamID < Int32.max - 2 * Int32(free) else {
            phase = .draining
            pool.connectionDraining(id: id)
            if streams.isEmpty { context?.close(promise: nil) }
            return
        }
        let items = pool.take(for: id, max: free)
        guard !items.isEmpty else { return }
        let now = NIODeadline.now()
        var out = output(capacity: items.count * 640)
        for item in items {
            let request = item.request
            let streamID = nextStreamID
            nextStreamID += 2
            writeHeaders(for: request, stream: streamID, endStream: request.body.readableBytes == 0, into: &out)
            var stream = InFlight(item: item, sentAt: now, sendWindow: peerInitialWindow)
            if request.body.readableBytes > 0 {
                stream.unsent = request.body
                writeData(&stream, stream: streamID, into: &out)
                if stream.unsent != nil { blocked.append(streamID) }
            }
            streams[streamID] = stream
        }
        output = out
        if streams.count > peakInFlight {
            peakInFlight = streams.count
            pool.noteInFlight(peakInFlight)
        }
    }

    /// The HEADERS frame (and CONTINUATION frames, for a block larger than the server's frame size).
    private func writeHeaders(for request: APNsRequest, stream: Int32, endStream: Bool, into out: inout ByteBuffer) {
        scratch.clear()
        if request.head.method == "POST" {
            scratch.writeImmutableBuffer(postPrefix)
        } else {
            HTTP2Wire.writeLiteral(nameIndex: HTTP2Wire.StaticName.method, value: request.head.method.utf8, into: &scratch)
            HTTP2Wire.writeIndexed(HTTP2Wire.StaticEntry.schemeHTTPS, into: &scratch)
            scratch.writeImmutableBuffer(authorityField)
        }
        HTTP2Wire.writeLiteral(nameIndex: HTTP2Wire.StaticName.path, value: request.path.utf8, into: &scratch)
        scratch.writeImmutableBuffer(request.head.encodedFields)
        if let apnsID = request.apnsID {
            HTTP2Wire.writeLiteral(name: "apns-id".utf8, value: apnsID.utf8, into: &scratch)
        }
        let flags = endStream ? HTTP2Wire.Flag.endStream : 0
        if scratch.readableBytes <= peerMaxFrameSize {
            HTTP2Wire.writeFrameHeader(
                into: &out, length: scratch.readableBytes, type: .headers, flags: flags | HTTP2Wire.Flag.endHeaders, stream: stream)
            out.writeImmutableBuffer(scratch)
            return
        }
        var first = true
        while scratch.readableBytes > 0 {
            var chunk = scratch.readSlice(length: min(scratch.readableBytes, peerMaxFrameSize))!
            let last = scratch.readableBytes == 0
            HTTP2Wire.writeFrameHeader(
                into: &out, length: chunk.readableBytes, type: first ? .headers : .continuation,
                flags: (first ? flags : 0) | (last ? HTTP2Wire.Flag.endHeaders : 0), stream: stream)
            out.writeBuffer(&chunk)
            first = false
        }
    }

    /// Writes as much of the stream's unsent body as the windows allow; `unsent` is nil once all went.
    private func writeData(_ stream: inout InFlight, stream streamID: Int32, into out: inout ByteBuffer) {
        guard var body = stream.unsent else { return }
        while body.readableBytes > 0 {
            let size = min(body.readableBytes, connectionSendWindow, stream.sendWindow, peerMaxFrameSize)
            guard size > 0 else { break }
            let chunk = body.readSlice(length: size)!
            connectionSendWindow -= size
            stream.sendWindow -= size
            HTTP2Wire.writeFrameHeader(
                into: &out, length: size, type: .data, flags: body.readableBytes == 0 ? HTTP2Wire.Flag.endStream : 0,
                stream: streamID)
            out.writeImmutableBuffer(chunk)
        }
        stream.unsent = body.readableBytes == 0 ? nil : body
    }

    /// Sends held-back bodies, oldest first, as far as the windows now allow.
    ///
    /// Costs what it sends, not what is held back: a WINDOW_UPDATE comes every few dozen bodies while a thousand
    /// streams may wait, so only the streams it reached are looked at again (the others still wait, in order), and
    /// each is changed in place in `streams` (a copy of an `InFlight` is a retain of each of its buffers).
    private func sendBlocked() {
        var out = output()
        var reached = 0
        while reached < blocked.count, connectionSendWindow > 0 {
            let streamID = blocked[reached]
            guard streams[streamID] != nil else {
                reached += 1
                continue
            }
            writeData(&streams[streamID]!, stream: streamID, into: &out)
            // The connection window ran out part-way through this body: it waits at the front.
            if let stream = streams[streamID], stream.unsent != nil, stream.sendWindow > 0 { break }
            reached += 1
        }
        output = out
        if reached > 0 {
            // Of those passed, only a body its own stream's window holds back still waits (and keeps its place).
            let waiting = blocked[..<reached].filter { streams[$0]?.unsent != nil }
            blocked.replaceSubrange(..<reached, with: waiting)
        }
        answeredInRead = true
    }

    func close() {
        guard phase != .closed, let context else { return }
        context.close(promise: nil)
    }

    // MARK: - Output

    /// The buffer this event's frames go into (taken out of `output`; callers put it back).
    private func output(capacity: Int = 256) -> ByteBuffer {
        if let existing = output {
            output = nil
            return existing
        }
        return context?.channel.allocator.buffer(capacity: max(capacity, 256)) ?? ByteBuffer()
    }

    private func appendOutput(_ body: (inout ByteBuffer) -> Void) {
        var out = output()
        body(&out)
        output = out
    }

    /// Writes and flushes what this event produced.
    private func flush() {
        guard let buffer = output else { return }
        output = nil
        guard let context, buffer.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    // MARK: - Private

    private func becomeReady() {
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
            completions.append((stream.item, .failed(APNsTransportError(kind: .streamReset, message: "the stream ended without a status"))))
            return
        }
        completions.append((stream.item, .answered(APNsResponse(
            status: status, retryAfter: stream.retryAfter, body: stream.body, headers: stream.headers))))
    }

    /// Hands this event's results to their jobs: one lock per job, not per request.
    private func deliverCompletions() {
        guard !completions.isEmpty else { return }
        let done = completions
        completions.removeAll(keepingCapacity: true)
        var start = 0
        while start < done.count {
            let job = done[start].0.job
            var end = start + 1
            while end < done.count, done[end].0.job === job { end += 1 }
            job.complete(done[start..<end].lazy.map { (index: $0.0.index, result: $0.1) })
            start = end
        }
    }

    /// Fails requests written more than `requestTimeout` ago. If nothing at all was read since the
    /// oldest of them was written, the connection has stopped answering: it is reported and closed
    /// (its other requests are then sent once more on another connection).
    private func expireRequests() {
        guard phase == .ready || phase == .draining, context != nil else { return }
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
        var out = output()
        for (streamID, stream) in expired {
            streams[streamID] = nil
            HTTP2Wire.writeRstStream(into: &out, stream: streamID, code: HTTP2Wire.ErrorCode.cancel)
            completions.append((stream.item, .failed(APNsTransportError(
                kind: .timeout, message: "no answer within \(timeout.nanoseconds / 1_000_000) ms"))))
        }
        output = out
        blocked.removeAll { streams[$0] == nil }
        deliverCompletions()
        if stalled {
            flush()
            context?.close(promise: nil)
        } else {
            pull()
            flush()
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
