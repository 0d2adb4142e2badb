import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

extension FakeAPNsServer {
    /// One client connection, at the HTTP/2 frame level (no child channel per stream, so the fake
    /// stays much faster than the sender it measures). The provider token is verified once per
    /// connection and token (again after a minute), and a payload once per distinct body.
    final class ConnectionHandler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        private struct Stream {
            var headers: HPACKHeaders
            var body: ByteBuffer?
        }

        private let state: SharedState
        private let number: Int
        private var context: ChannelHandlerContext?
        private var streams: [Int32: Stream] = [:]
        private var held: [(Int32, RequestCheck.Checked, ByteBuffer)] = []
        private var unacknowledgedBytes = 0
        private var wrote = false
        private var peak = 0
        private var verified: (jwt: String, at: Date, result: Result<Int64, Refusal>)?
        private var validBody: ByteBuffer?
        /// Set when a test asked to drop the connection: nothing more is read, answered or counted.
        private var dropping = false

        init(state: SharedState, number: Int) {
            self.state = state
            self.number = number
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        func channelActive(context: ChannelHandlerContext) {
            // A large connection window from the start, replenished as it is used.
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(
                streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 8 << 20))), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !dropping else { return }
            let frame = unwrapInboundIn(data)
            let id = Int32(frame.streamID)
            switch frame.payload {
            case .headers(let headers):
                if var stream = streams[id] {
                    // Trailers.
                    stream.headers.add(contentsOf: headers.headers)
                    streams[id] = stream
                } else {
                    streams[id] = Stream(headers: headers.headers, body: nil)
                    if streams.count + held.count > peak {
                        peak = streams.count + held.count
                        let peak = peak
                        state.locked { $0.peakStreams = max($0.peakStreams, peak) }
                    }
                }
                if headers.endStream { process(id) }
            case .data(let payload):
                unacknowledgedBytes += payload.data.readableBytes + (payload.paddingBytes ?? 0)
                guard var stream = streams[id] else { return }
                if case .byteBuffer(var buffer) = payload.data {
                    if stream.body == nil {
                        stream.body = buffer
                    } else {
                        stream.body!.writeBuffer(&buffer)
                    }
                }
                streams[id] = stream
                if payload.endStream { process(id) }
            case .rstStream:
                streams[id] = nil
                held.removeAll { $0.0 == id }
            default:
                break
            }
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            if unacknowledgedBytes >= 1 << 20 {
                context.write(wrapOutboundOut(HTTP2Frame(
                    streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))), promise: nil)
                unacknowledgedBytes = 0
                wrote = true
            }
            if wrote {
                wrote = false
                context.flush()
            }
            context.fireChannelReadComplete()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func process(_ id: Int32) {
            guard let stream = streams.removeValue(forKey: id) else { return }
            state.arrived()
            let body = stream.body ?? ByteBuffer()
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

        private func act(on id: Int32, checked: RequestCheck.Checked, body: ByteBuffer) {
            guard let context else { return }
            let eventLoop = context.eventLoop
            let this = NIOLoopBound(self, eventLoop: eventLoop)
            let holder = SharedState.Holder(eventLoop: eventLoop, release: { this.value.release() })
            switch state.decide(checked, body: body, connection: number, holder: holder) {
            case .dropConnection:
                // What was answered before goes out first; what came after is never looked at.
                dropping = true
                context.flush()
                context.close(promise: nil)
            case .hold:
                held.append((id, checked, body))
            case .answer(let status, let reason):
                answer(id, status: status, reason: reason, apnsID: checked.apnsID)
            }
        }

        private func release() {
            let waiting = held
            held.removeAll()
            for (id, checked, body) in waiting { act(on: id, checked: checked, body: body) }
            context?.flush()
        }

        private func answer(_ id: Int32, status: Int, reason: String?, apnsID: String?) {
            guard let context else { return }
            let streamID = HTTP2StreamID(id)
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: String(status))
            if let apnsID { headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable) }
            guard let reason else {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
                wrote = true
                return
            }
            headers.add(name: "content-type", value: "application/json")
            var body = #"{"reason":"\#(reason)""#
            if status == 410 { body += #","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))"# }
            body += "}"
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))), promise: nil)
            // The body in as many DATA frames as the test asked for.
            let bytes = Array(body.utf8)
            let frames = max(1, min(state.locked { $0.errorBodyFrames }, bytes.count))
            let size = (bytes.count + frames - 1) / frames
            var start = 0
            while start < bytes.count {
                let end = min(start + size, bytes.count)
                let chunk = context.channel.allocator.buffer(bytes: bytes[start..<end])
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(chunk), endStream: end == bytes.count)))),
                    promise: nil)
                start = end
            }
            wrote = true
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
