import NIOCore
import NIOHPACK

/// The few pieces of HTTP/2 (RFC 9113) and HPACK (RFC 7541) that the APNs sender and the fake APNs
/// speak by hand: frame headers, a frame reader over a cumulation buffer, SETTINGS, and the HPACK
/// representations used for requests and answers (indexed static entries and literals without
/// indexing, never Huffman). Response header blocks are decoded with NIOHPACK's decoder.
package enum HTTP2Wire {
    package static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// The connection and stream windows before any SETTINGS or WINDOW_UPDATE.
    package static let defaultWindow = 65_535
    package static let defaultMaxFrameSize = 16_384
    package static let maxWindow = Int(Int32.max)

    package enum FrameType: UInt8 {
        case data = 0x0, headers = 0x1, priority = 0x2, rstStream = 0x3, settings = 0x4, pushPromise = 0x5
        case ping = 0x6, goAway = 0x7, windowUpdate = 0x8, continuation = 0x9
    }

    package enum Flag {
        package static let endStream: UInt8 = 0x1
        package static let ack: UInt8 = 0x1
        package static let endHeaders: UInt8 = 0x4
        package static let padded: UInt8 = 0x8
        package static let priority: UInt8 = 0x20
    }

    package enum Setting: UInt16 {
        case headerTableSize = 0x1, enablePush = 0x2, maxConcurrentStreams = 0x3, initialWindowSize = 0x4
        case maxFrameSize = 0x5, maxHeaderListSize = 0x6
    }

    package enum ErrorCode {
        package static let noError: UInt32 = 0x0
        package static let protocolError: UInt32 = 0x1
        package static let flowControlError: UInt32 = 0x3
        package static let frameSizeError: UInt32 = 0x6
        package static let refusedStream: UInt32 = 0x7
        package static let cancel: UInt32 = 0x8
        package static let compressionError: UInt32 = 0x9

        package static func name(_ code: UInt32) -> String {
            switch code {
            case 0x0: "NO_ERROR"
            case 0x1: "PROTOCOL_ERROR"
            case 0x2: "INTERNAL_ERROR"
            case 0x3: "FLOW_CONTROL_ERROR"
            case 0x5: "STREAM_CLOSED"
            case 0x6: "FRAME_SIZE_ERROR"
            case 0x7: "REFUSED_STREAM"
            case 0x8: "CANCEL"
            case 0x9: "COMPRESSION_ERROR"
            case 0xb: "ENHANCE_YOUR_CALM"
            default: "error 0x" + String(code, radix: 16)
            }
        }
    }

    /// A frame whose whole payload has arrived.
    package struct Frame {
        package var type: UInt8
        package var flags: UInt8
        package var streamID: Int32
        package var payload: ByteBuffer

        package func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
    }

    package struct WireError: Error, CustomStringConvertible {
        package var code: UInt32
        package var message: String

        package init(_ code: UInt32, _ message: String) {
            self.code = code
            self.message = message
        }

        package var description: String { "\(ErrorCode.name(code)): \(message)" }
    }

    // MARK: - Writing frames

    /// Writes a frame header for a payload of `length` bytes.
    @inline(__always)
    package static func writeFrameHeader(into buffer: inout ByteBuffer, length: Int, type: FrameType, flags: UInt8, stream: Int32) {
        buffer.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeInteger(UInt16(truncatingIfNeeded: length))
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(flags)
        buffer.writeInteger(UInt32(bitPattern: stream) & 0x7FFF_FFFF)
    }

    package static func writeSettings(into buffer: inout ByteBuffer, _ settings: [(Setting, Int)]) {
        writeFrameHeader(into: &buffer, length: settings.count * 6, type: .settings, flags: 0, stream: 0)
        for (setting, value) in settings {
            buffer.writeInteger(setting.rawValue)
            buffer.writeInteger(UInt32(truncatingIfNeeded: value))
        }
    }

    package static func writeSettingsAck(into buffer: inout ByteBuffer) {
        writeFrameHeader(into: &buffer, length: 0, type: .settings, flags: Flag.ack, stream: 0)
    }

    package static func writeWindowUpdate(into buffer: inout ByteBuffer, stream: Int32, increment: Int) {
        writeFrameHeader(into: &buffer, length: 4, type: .windowUpdate, flags: 0, stream: stream)
        buffer.writeInteger(UInt32(truncatingIfNeeded: increment) & 0x7FFF_FFFF)
    }

    package static func writeRstStream(into buffer: inout ByteBuffer, stream: Int32, code: UInt32) {
        writeFrameHeader(into: &buffer, length: 4, type: .rstStream, flags: 0, stream: stream)
        buffer.writeInteger(code)
    }

    package static func writeGoAway(into buffer: inout ByteBuffer, lastStream: Int32, code: UInt32) {
        writeFrameHeader(into: &buffer, length: 8, type: .goAway, flags: 0, stream: 0)
        buffer.writeInteger(UInt32(bitPattern: lastStream) & 0x7FFF_FFFF)
        buffer.writeInteger(code)
    }

    /// The ACK of a PING, echoing its payload; nothing for a PING that is itself an ACK or malformed.
    package static func writePingAck(answering ping: Frame, into buffer: inout ByteBuffer) {
        guard !ping.has(Flag.ack), ping.payload.readableBytes == 8 else { return }
        writeFrameHeader(into: &buffer, length: 8, type: .ping, flags: Flag.ack, stream: 0)
        buffer.writeImmutableBuffer(ping.payload)
    }

    // MARK: - Reading frames

    /// The bytes read so far and not yet taken as frames (a cumulation buffer): a channel handler
    /// appends what each read brought, takes whole frames, and calls `endRead()` at the end.
    package struct FrameReader {
        private var buffer: ByteBuffer?

        package init() {}

        /// Adds what a read brought (kept as is when nothing was waiting: no copy).
        package mutating func append(_ bytes: inout ByteBuffer) {
            if buffer == nil {
                buffer = bytes
            } else {
                buffer!.writeBuffer(&bytes)
            }
        }

        /// Takes the client connection preface off the front: nil while it has not all arrived,
        /// false when the bytes are something else.
        package mutating func readPreface() -> Bool? {
            guard let available = buffer?.readableBytes, available >= preface.count else { return nil }
            return buffer!.readBytes(length: preface.count) == preface
        }

        /// The next whole frame, or nil when it has not all arrived.
        /// Throws FRAME_SIZE_ERROR for a frame longer than `maxFrameSize`.
        package mutating func next(maxFrameSize: Int) throws(WireError) -> Frame? {
            guard buffer != nil else { return nil }
            return try nextFrame(from: &buffer!, maxFrameSize: maxFrameSize)
        }

        /// Drops the buffer once it is all read, or its read bytes once they are many.
        package mutating func endRead() {
            guard let readable = buffer?.readableBytes else { return }
            if readable == 0 {
                buffer = nil
            } else if buffer!.readerIndex > 64 << 10 {
                buffer!.discardReadBytes()
            }
        }
    }

    /// Joins a HEADERS frame and its CONTINUATION frames into one header block and decodes it with
    /// NIOHPACK's decoder (every block, so the decoder's dynamic table stays in step with the peer's).
    package struct HeaderBlockReader {
        /// A decoded header block and the stream it belongs to.
        package struct Block {
            package var stream: Int32
            package var endStream: Bool
            package var headers: HPACKHeaders
        }

        private var decoder: HPACKDecoder
        /// A header block waiting for its CONTINUATION frames.
        private var pending: (stream: Int32, endStream: Bool, block: ByteBuffer)?

        package init(maxHeaderListSize: Int = HPACKDecoder.defaultMaxHeaderListSize) {
            decoder = HPACKDecoder(
                allocator: ByteBufferAllocator(), maxDynamicTableSize: HPACKDecoder.maxDynamicTableSize,
                maxHeaderListSize: maxHeaderListSize)
        }

        /// Whether `frame` is this reader's: a HEADERS or CONTINUATION frame, or any frame while a
        /// block waits for its CONTINUATION (which `read` then refuses).
        package func takes(_ frame: Frame) -> Bool {
            pending != nil || frame.type == FrameType.headers.rawValue || frame.type == FrameType.continuation.rawValue
        }

        /// The block once its last frame (END_HEADERS) is in; nil while more is to come.
        /// Throws PROTOCOL_ERROR for an interrupted block or a stray CONTINUATION, COMPRESSION_ERROR
        /// for a block HPACK cannot decode.
        package mutating func read(_ frame: Frame) throws(WireError) -> Block? {
            let stream: Int32
            let endStream: Bool
            var block: ByteBuffer
            if let waiting = pending {
                guard frame.type == FrameType.continuation.rawValue, frame.streamID == waiting.stream else {
                    throw WireError(ErrorCode.protocolError, "a header block was interrupted")
                }
                (stream, endStream, block) = waiting
                pending = nil
                var payload = frame.payload
                block.writeBuffer(&payload)
            } else {
                guard frame.type == FrameType.headers.rawValue else {
                    throw WireError(ErrorCode.protocolError, "CONTINUATION without HEADERS")
                }
                (stream, endStream, block) = (frame.streamID, frame.has(Flag.endStream), try unpadded(frame))
            }
            guard frame.has(Flag.endHeaders) else {
                pending = (stream, endStream, block)
                return nil
            }
            do {
                return Block(stream: stream, endStream: endStream, headers: try decoder.decodeHeaders(from: &block))
            } catch {
                throw WireError(ErrorCode.compressionError, "\(error)")
            }
        }
    }

    /// Takes the next whole frame off the front of `buffer`, or nil when it has not all arrived.
    /// Throws FRAME_SIZE_ERROR for a frame longer than `maxFrameSize`.
    package static func nextFrame(from buffer: inout ByteBuffer, maxFrameSize: Int) throws(WireError) -> Frame? {
        guard buffer.readableBytes >= 9,
              let high = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              let low = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt16.self)
        else { return nil }
        let length = Int(high) << 16 | Int(low)
        guard length <= maxFrameSize else { throw WireError(ErrorCode.frameSizeError, "a frame of \(length) bytes") }
        guard buffer.readableBytes >= 9 + length else { return nil }
        buffer.moveReaderIndex(forwardBy: 3)
        let type = buffer.readInteger(as: UInt8.self)!
        let flags = buffer.readInteger(as: UInt8.self)!
        let stream = Int32(bitPattern: buffer.readInteger(as: UInt32.self)! & 0x7FFF_FFFF)
        let payload = buffer.readSlice(length: length)!
        return Frame(type: type, flags: flags, streamID: stream, payload: payload)
    }

    /// The payload of a HEADERS or DATA frame without its padding (and, for HEADERS, its priority fields).
    package static func unpadded(_ frame: Frame) throws(WireError) -> ByteBuffer {
        var payload = frame.payload
        var padding = 0
        if frame.has(Flag.padded) {
            guard let length = payload.readInteger(as: UInt8.self) else { throw WireError(ErrorCode.protocolError, "padding") }
            padding = Int(length)
        }
        if frame.type == FrameType.headers.rawValue, frame.has(Flag.priority) {
            guard payload.readableBytes >= 5 else { throw WireError(ErrorCode.protocolError, "priority fields") }
            payload.moveReaderIndex(forwardBy: 5)
        }
        guard padding <= payload.readableBytes else { throw WireError(ErrorCode.protocolError, "padding longer than the frame") }
        return payload.getSlice(at: payload.readerIndex, length: payload.readableBytes - padding)!
    }

    /// The increment of a WINDOW_UPDATE frame. Throws FRAME_SIZE_ERROR for a malformed one.
    package static func windowIncrement(of frame: Frame) throws(WireError) -> Int {
        guard frame.payload.readableBytes == 4, let raw = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self)
        else { throw WireError(ErrorCode.frameSizeError, "a malformed WINDOW_UPDATE") }
        return Int(raw & 0x7FFF_FFFF)
    }

    /// The SETTINGS of a non-ACK SETTINGS frame, in order.
    package static func settings(of frame: Frame) throws(WireError) -> [(UInt16, UInt32)] {
        guard frame.streamID == 0, frame.payload.readableBytes % 6 == 0 else {
            throw WireError(ErrorCode.frameSizeError, "a malformed SETTINGS frame")
        }
        var payload = frame.payload
        var result: [(UInt16, UInt32)] = []
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            result.append((id, value))
        }
        return result
    }

    // MARK: - HPACK

    /// An HPACK integer with an `prefix`-bit prefix, the first byte's other bits being `pattern`.
    package static func writeHPACKInteger(_ value: Int, prefix: Int, pattern: UInt8, into buffer: inout ByteBuffer) {
        let limit = (1 << prefix) - 1
        if value < limit {
            buffer.writeInteger(pattern | UInt8(value))
            return
        }
        buffer.writeInteger(pattern | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            buffer.writeInteger(UInt8(rest & 0x7F | 0x80))
            rest >>= 7
        }
        buffer.writeInteger(UInt8(rest))
    }

    /// An indexed field (static table index).
    package static func writeIndexed(_ index: Int, into buffer: inout ByteBuffer) {
        writeHPACKInteger(index, prefix: 7, pattern: 0x80, into: &buffer)
    }

    /// A literal field without indexing whose name is static-table entry `nameIndex`.
    package static func writeLiteral(nameIndex: Int, value: some Collection<UInt8>, into buffer: inout ByteBuffer) {
        writeHPACKInteger(nameIndex, prefix: 4, pattern: 0x00, into: &buffer)
        writeHPACKInteger(value.count, prefix: 7, pattern: 0x00, into: &buffer)
        buffer.writeBytes(value)
    }

    /// A literal field without indexing with a literal name (lowercase, as HTTP/2 requires).
    package static func writeLiteral(name: some Collection<UInt8>, value: some Collection<UInt8>, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0x00))
        writeHPACKInteger(name.count, prefix: 7, pattern: 0x00, into: &buffer)
        buffer.writeBytes(name)
        writeHPACKInteger(value.count, prefix: 7, pattern: 0x00, into: &buffer)
        buffer.writeBytes(value)
    }

    /// Static-table indexes (RFC 7541 appendix A) of the names this code writes.
    package enum StaticName {
        package static let authority = 1
        package static let method = 2
        package static let path = 4
        package static let scheme = 6
        package static let status = 8
        package static let contentType = 31
        package static let authorization = 23
        package static let retryAfter = 53
    }

    /// Whole static entries (name and value).
    package enum StaticEntry {
        package static let methodGET = 2
        package static let methodPOST = 3
        package static let schemeHTTPS = 7
        package static func status(_ code: Int) -> Int? {
            switch code {
            case 200: 8
            case 204: 9
            case 206: 10
            case 304: 11
            case 400: 12
            case 404: 13
            case 500: 14
            default: nil
            }
        }
    }

    /// A field in the cheapest form this code knows: a static name index when the name has one.
    package static func writeField(name: String, value: String, into buffer: inout ByteBuffer) {
        let index: Int? = switch name {
        case ":authority": StaticName.authority
        case ":method": StaticName.method
        case ":path": StaticName.path
        case ":scheme": StaticName.scheme
        case ":status": StaticName.status
        case "authorization": StaticName.authorization
        case "content-type": StaticName.contentType
        case "retry-after": StaticName.retryAfter
        default: nil
        }
        if let index {
            writeLiteral(nameIndex: index, value: value.utf8, into: &buffer)
        } else {
            writeLiteral(name: name.lowercased().utf8, value: value.utf8, into: &buffer)
        }
    }
}
