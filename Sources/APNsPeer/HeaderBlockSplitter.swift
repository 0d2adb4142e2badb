import NIOCore

/// Between TLS and NIOHTTP2's handler: rewrites every outgoing HEADERS frame whose header block is
/// longer than `fragmentBytes` as a HEADERS frame and CONTINUATION frames of at most that many bytes
/// (RFC 9113 §6.10), which NIOHTTP2 itself never sends. Other frames pass unchanged.
final class HeaderBlockSplitter: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private static let headersType: UInt8 = 0x1
    private static let continuationType: UInt8 = 0x9
    private static let endHeaders: UInt8 = 0x4
    private static let padded: UInt8 = 0x8
    private static let priority: UInt8 = 0x20

    private let fragmentBytes: Int
    /// Bytes of a frame not yet whole.
    private var carried: ByteBuffer?

    init(fragmentBytes: Int) {
        self.fragmentBytes = max(1, fragmentBytes)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var incoming) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        var pending = carried ?? context.channel.allocator.buffer(capacity: incoming.readableBytes)
        carried = nil
        pending.writeBuffer(&incoming)
        var out = context.channel.allocator.buffer(capacity: pending.readableBytes + 64)
        while pending.readableBytes >= 9 {
            let start = pending.readerIndex
            let length = Int(pending.getInteger(at: start, as: UInt8.self)!) << 16
                | Int(pending.getInteger(at: start + 1, as: UInt16.self)!)
            guard pending.readableBytes >= 9 + length else { break }
            let type = pending.getInteger(at: start + 3, as: UInt8.self)!
            let flags = pending.getInteger(at: start + 4, as: UInt8.self)!
            let stream = pending.getInteger(at: start + 5, as: UInt32.self)!
            let plain = flags & (Self.padded | Self.priority) == 0
            if type == Self.headersType, flags & Self.endHeaders != 0, plain, length > fragmentBytes {
                pending.moveReaderIndex(forwardBy: 9)
                var block = pending.readSlice(length: length)!
                var first = true
                while block.readableBytes > 0 {
                    var piece = block.readSlice(length: min(fragmentBytes, block.readableBytes))!
                    let last = block.readableBytes == 0
                    let pieceFlags = (first ? flags & ~Self.endHeaders : 0) | (last ? Self.endHeaders : 0)
                    Self.writeHeader(into: &out, length: piece.readableBytes,
                                     type: first ? Self.headersType : Self.continuationType, flags: pieceFlags, stream: stream)
                    out.writeBuffer(&piece)
                    first = false
                }
            } else {
                var frame = pending.readSlice(length: 9 + length)!
                out.writeBuffer(&frame)
            }
        }
        if pending.readableBytes > 0 { carried = pending }
        context.write(wrapOutboundOut(.byteBuffer(out)), promise: promise)
    }

    private static func writeHeader(into buffer: inout ByteBuffer, length: Int, type: UInt8, flags: UInt8, stream: UInt32) {
        buffer.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeInteger(UInt16(truncatingIfNeeded: length))
        buffer.writeInteger(type)
        buffer.writeInteger(flags)
        buffer.writeInteger(stream)
    }
}
