import Foundation
import MatchcastDelivery
import NIOCore
import NIOHPACK

extension FakeAPNsServer {
    /// One client connection, framed by hand on top of TLS (no HTTP/2 state machine per stream, so
    /// the fake stays much faster than the sender it measures). Header blocks are decoded with
    /// NIOHPACK's decoder (so whatever a client encodes is read as a real server would); answers
    /// are written as static-table indexes and literals, every answer of one read in one buffer and
    /// one flush. Flow control both ways: the client's receive window is respected for error bodies
    /// (what does not fit waits for its WINDOW_UPDATE), and the window the client uses is handed
    /// back. Streams over `maxConcurrentStreams` are refused (RST_STREAM REFUSED_STREAM).
    ///
    /// The provider token is verified once per connection and token (again after a minute), and a
    /// payload once per distinct body.
    final class ConnectionHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private struct Stream {
            var headers: HPACKHeaders
            var body: ByteBuffer?
        }

        /// A DATA frame waiting for the client's window.
        private struct PendingData {
            var stream: Int32
            var chunk: ByteBuffer
            var endStream: Bool
        }

        private let state: SharedState
        private let number: Int
        private let maxConcurrentStreams: Int
        /// Our receive windows when a test keeps them small (nil: 1 MiB per stream, 8 MiB more for the connection).
        private let receiveWindow: Int?
        private var context: ChannelHandlerContext?
        private var streams: [Int32: Stream] = [:]
        private var held: [(Int32, RequestCheck.Checked, ByteBuffer)] = []
        private var peak = 0
        private var verified: (jwt: String, at: Date, result: Result<Int64, Refusal>)?
        private var validBody: ByteBuffer?
        /// Set when a test asked to drop the connection: nothing more is read, answered or counted.
        private var dropping = false

        // Framing state.
        private var prefaceSeen = false
        private var inbound = HTTP2Wire.FrameReader()
        private var output: ByteBuffer?
        /// Header lists up to 64 KiB (what the fake advertises), so a client's CONTINUATION frames can be tested.
        private var headerBlocks = HTTP2Wire.HeaderBlockReader(maxHeaderListSize: 64 << 10)
        private var lastStreamID: Int32 = 0
        private var sendWindow = HTTP2Wire.defaultWindow
        private var clientMaxFrameSize = HTTP2Wire.defaultMaxFrameSize
        private var waitingData: [PendingData] = []
        /// Streams whose answer is partly written (their last DATA waits for the window).
        private var unfinished = 0
        private var unacknowledgedBytes = 0

        init(state: SharedState, number: Int, maxConcurrentStreams: Int, receiveWindow: Int?) {
            self.state = state
            self.number = number
            self.maxConcurrentStreams = maxConcurrentStreams
            self.receiveWindow = receiveWindow
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        func channelActive(context: ChannelHandlerContext) {
            // The server's preface (TLS holds it until the handshake is done), and a large connection
            // window from the start, replenished as it is used.
            var buffer = context.channel.allocator.buffer(capacity: 64)
            HTTP2Wire.writeSettings(into: &buffer, [
                (.maxConcurrentStreams, maxConcurrentStreams), (.initialWindowSize, receiveWindow ?? 1 << 20),
                (.maxHeaderListSize, 64 << 10),
            ])
            if receiveWindow == nil {
                HTTP2Wire.writeWindowUpdate(into: &buffer, stream: 0, increment: 8 << 20)
            }
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !dropping else { return }
            var buffer = unwrapInboundIn(data)
            inbound.append(&buffer)
            if !prefaceSeen {
                guard let preface = inbound.readPreface() else { return }
                guard preface else {
                    context.close(promise: nil)
                    return
                }
                prefaceSeen = true
            }
            do {
                while !dropping, let frame = try inbound.next(maxFrameSize: HTTP2Wire.defaultMaxFrameSize) {
                    try handle(frame)
                }
            } catch {
                var out = takeOutput()
                HTTP2Wire.writeGoAway(into: &out, lastStream: lastStreamID, code: error.code)
                output = out
                flush()
                context.close(promise: nil)
                return
            }
            if dropping { return }
            inbound.endRead()
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if unacknowledgedBytes >= (receiveWindow == nil ? 1 << 20 : 1) {
                var out = takeOutput()
                HTTP2Wire.writeWindowUpdate(into: &out, stream: 0, increment: unacknowledgedBytes)
                output = out
                unacknowledgedBytes = 0
            }
            flush()
            context.fireChannelReadComplete()
        }

        func channelInactive(context: ChannelHandlerContext) {
            cachedHolder = nil  // it refers back to this handler
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        // MARK: - Frames from the client

        private func handle(_ frame: HTTP2Wire.Frame) throws(HTTP2Wire.WireError) {
            if headerBlocks.takes(frame) {
                if let block = try headerBlocks.read(frame) { try headerBlock(block) }
                return
            }
            guard let type = HTTP2Wire.FrameType(rawValue: frame.type) else { return }
            switch type {
            case .headers, .continuation:
                break  // the header block reader's
            case .data:
                unacknowledgedBytes += frame.payload.readableBytes
                let payload = try HTTP2Wire.unpadded(frame)
                guard var stream = streams[frame.streamID] else { return }
                if stream.body == nil {
                    stream.body = payload
                } else {
                    var payload = payload
                    stream.body!.writeBuffer(&payload)
                }
                streams[frame.streamID] = stream
                if frame.has(HTTP2Wire.Flag.endStream) {
                    process(frame.streamID)
                } else if receiveWindow != nil, frame.payload.readableBytes > 0 {
                    // Small windows: the stream's is handed back at once (the connection's at the end of the read).
                    var out = takeOutput()
                    HTTP2Wire.writeWindowUpdate(into: &out, stream: frame.streamID, increment: frame.payload.readableBytes)
                    output = out
                }
            case .settings:
                guard !frame.has(HTTP2Wire.Flag.ack) else { return }
                for (identifier, value) in try HTTP2Wire.settings(of: frame) {
                    if identifier == HTTP2Wire.Setting.maxFrameSize.rawValue { clientMaxFrameSize = Int(value) }
                    // SETTINGS_INITIAL_WINDOW_SIZE only limits a stream's answer body: far smaller than any window.
                }
                var out = takeOutput()
                HTTP2Wire.writeSettingsAck(into: &out)
                output = out
            case .windowUpdate:
                let increment = try HTTP2Wire.windowIncrement(of: frame)
                guard frame.streamID == 0 else { return }
                sendWindow += increment
                sendWaitingData()
            case .ping:
                var out = takeOutput()
                HTTP2Wire.writePingAck(answering: frame, into: &out)
                output = out
            case .rstStream:
                streams[frame.streamID] = nil
                held.removeAll { $0.0 == frame.streamID }
            case .goAway:
                context?.close(promise: nil)
            case .pushPromise:
                throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.protocolError, "PUSH_PROMISE from a client")
            case .priority:
                break
            }
        }

        private func headerBlock(_ block: HTTP2Wire.HeaderBlockReader.Block) throws(HTTP2Wire.WireError) {
            let (id, headers) = (block.stream, block.headers)
            if var stream = streams[id] {
                // Trailers.
                stream.headers.add(contentsOf: headers)
                streams[id] = stream
            } else {
                guard id > lastStreamID, id % 2 == 1 else {
                    throw HTTP2Wire.WireError(HTTP2Wire.ErrorCode.protocolError, "stream \(id) reused or even")
                }
                lastStreamID = id
                let open = streams.count + held.count + unfinished
                guard open < maxConcurrentStreams else {
                    var out = takeOutput()
                    HTTP2Wire.writeRstStream(into: &out, stream: id, code: HTTP2Wire.ErrorCode.refusedStream)
                    output = out
                    return
                }
                streams[id] = Stream(headers: headers, body: nil)
                if open + 1 > peak {
                    peak = open + 1
                    let peak = peak
                    state.locked { $0.peakStreams = max($0.peakStreams, peak) }
                }
            }
            if block.endStream { process(id) }
        }

        // MARK: - Answers

        private func process(_ id: Int32) {
            guard let stream = streams.removeValue(forKey: id) else { return }
            state.arrived()
            let body = stream.body ?? ByteBuffer()
            // Channel management and broadcasts: FakeAPNsServer+Channels.swift (never a device push's path).
            if !Self.isDevicePush(stream.headers),
               let reply = FakeAPNsServer.channelReply(stream.headers, body: body, state: state, verify: { verify($0) }) {
                if !reply.unanswered { answer(id, status: reply.status, reason: nil, apnsID: nil, extra: reply.headers, body: reply.body) }
                return
            }
            let checked = RequestCheck.check(
                stream.headers, body: body, verify: { verify($0) },
                bodyIsValid: { body in
                    if let validBody, validBody == body { return true }
                    guard RequestCheck.isValidPayload(body) else { return false }
                    validBody = body
                    return true
                })
            act(on: id, checked: checked, body: body)
        }

        /// Whether `:path` is a device push's, `/3/device/...` (the first field of that name).
        private static func isDevicePush(_ headers: HPACKHeaders) -> Bool {
            for field in headers where field.name == ":path" { return field.value.utf8.starts(with: "/3/device/".utf8) }
            return false
        }

        private func act(on id: Int32, checked: RequestCheck.Checked, body: ByteBuffer) {
            guard let context else { return }
            switch state.decide(checked, body: body, connection: number, holder: holder(context)) {
            case .dropConnection:
                // What was answered before goes out first; what came after is never looked at.
                dropping = true
                flush()
                context.close(promise: nil)
            case .hold:
                held.append((id, checked, body))
            case .answer(let status, let reason):
                answer(id, status: status, reason: reason, apnsID: checked.apnsID)
            }
        }

        /// How answering resumes this connection's held requests (made once).
        private var cachedHolder: SharedState.Holder?

        private func holder(_ context: ChannelHandlerContext) -> SharedState.Holder {
            if let cachedHolder { return cachedHolder }
            let this = NIOLoopBound(self, eventLoop: context.eventLoop)
            let holder = SharedState.Holder(eventLoop: context.eventLoop, release: { this.value.release() })
            cachedHolder = holder
            return holder
        }

        private func release() {
            let waiting = held
            held.removeAll()
            for (id, checked, body) in waiting { act(on: id, checked: checked, body: body) }
            flush()
        }

        /// `extra` header fields and a JSON `body` other than the error reason: channel answers.
        private func answer(
            _ id: Int32, status: Int, reason: String?, apnsID: String?, extra: [(name: String, value: String)] = [], body custom: String? = nil
        ) {
            var out = takeOutput()
            defer { output = out }
            let start = out.writerIndex
            HTTP2Wire.writeFrameHeader(into: &out, length: 0, type: .headers, flags: 0, stream: id)
            let blockStart = out.writerIndex
            if let index = HTTP2Wire.StaticEntry.status(status) {
                HTTP2Wire.writeIndexed(index, into: &out)
            } else {
                HTTP2Wire.writeLiteral(nameIndex: HTTP2Wire.StaticName.status, value: String(status).utf8, into: &out)
            }
            if let apnsID { HTTP2Wire.writeLiteral(name: "apns-id".utf8, value: apnsID.utf8, into: &out) }
            for field in extra { HTTP2Wire.writeLiteral(name: field.name.utf8, value: field.value.utf8, into: &out) }
            if reason != nil || custom != nil {
                HTTP2Wire.writeLiteral(nameIndex: HTTP2Wire.StaticName.contentType, value: "application/json".utf8, into: &out)
            }
            let length = out.writerIndex - blockStart
            // Length and flags, now that they are known.
            out.setInteger(UInt8(truncatingIfNeeded: length >> 16), at: start)
            out.setInteger(UInt16(truncatingIfNeeded: length), at: start + 1)
            out.setInteger(HTTP2Wire.Flag.endHeaders | (reason == nil && custom == nil ? HTTP2Wire.Flag.endStream : 0), at: start + 4)
            var body: String
            if let custom {
                body = custom
            } else {
                guard let reason else { return }
                body = #"{"reason":"\#(reason)""#
                if status == 410 { body += #","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))"# }
                body += "}"
            }
            // The body in as many DATA frames as the test asked for, within the client's window.
            let bytes = Array(body.utf8)
            let frames = max(1, min(state.locked { $0.errorBodyFrames }, bytes.count))
            let size = min((bytes.count + frames - 1) / frames, clientMaxFrameSize)
            var chunkStart = 0
            unfinished += 1
            while chunkStart < bytes.count {
                let end = min(chunkStart + size, bytes.count)
                var chunk = ByteBufferAllocator().buffer(capacity: end - chunkStart)
                chunk.writeBytes(bytes[chunkStart..<end])
                waitingData.append(PendingData(stream: id, chunk: chunk, endStream: end == bytes.count))
                chunkStart = end
            }
            output = out
            sendWaitingData()
            out = takeOutput()
        }

        /// Writes waiting DATA frames, oldest first, while the client's connection window allows.
        private func sendWaitingData() {
            guard !waitingData.isEmpty else { return }
            var out = takeOutput()
            var sent = 0
            for var pending in waitingData {
                guard pending.chunk.readableBytes <= sendWindow else { break }
                sendWindow -= pending.chunk.readableBytes
                HTTP2Wire.writeFrameHeader(
                    into: &out, length: pending.chunk.readableBytes, type: .data,
                    flags: pending.endStream ? HTTP2Wire.Flag.endStream : 0, stream: pending.stream)
                out.writeBuffer(&pending.chunk)
                if pending.endStream { unfinished -= 1 }
                sent += 1
            }
            waitingData.removeFirst(sent)
            output = out
        }

        // MARK: - Output

        private func takeOutput() -> ByteBuffer {
            if let existing = output {
                output = nil
                return existing
            }
            return context?.channel.allocator.buffer(capacity: 4096) ?? ByteBuffer()
        }

        private func flush() {
            guard let buffer = output else { return }
            output = nil
            guard let context, buffer.readableBytes > 0 else { return }
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }

        private func verify(_ jwt: String) -> Result<Int64, Refusal> {
            let now = Date()
            if let verified, verified.jwt == jwt, now.timeIntervalSince(verified.at) < 60 { return verified.result }
            let result = state.verifier.verify(jwt)
            state.locked { $0.verifications += 1 }
            verified = (jwt, now, result)
            return result
        }
    }
}
