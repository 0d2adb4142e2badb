import Foundation
import MatchcastCore
@testable import MatchcastDelivery
import MatchcastTesting
import NIOCore
import Testing

/// The hand-written HTTP/2 framing of the APNs sender against the fake (which decodes header
/// blocks with NIOHPACK): flow control when the server keeps its windows small, header blocks
/// larger than a frame (CONTINUATION), requests without a body, and requests with any path and
/// header fields (the entry point broadcasts use).
@Suite("APNs HTTP/2 framing", .serialized, .timeLimit(.minutes(2)))
struct APNsWireTests {
    private typealias F = APNsFixture

    @Test func smallServerWindowsStillCarryEveryBodyWhole() async throws {
        let (key, _) = try F.credentials()
        // Bodies of about 270 bytes against 100-byte stream windows and the default 64 KiB connection
        // window: every body goes in several DATA frames, each after a WINDOW_UPDATE.
        let deliveries = F.deliveries(600)
        try await F.withServer(key: key, receiveWindow: 100) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, maxConnections: 1)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)
            let accepted = server.accepted
            #expect(accepted.count == 600)
            #expect(Set(accepted.map(\.token)) == Set(deliveries.map(\.target.value)))
            let payload = deliveries[0].payload.bytes
            #expect(payload.count > 200, "several windows per body")
            #expect(accepted.allSatisfy { $0.body == payload })
            #expect(server.duplicates == 0)
            #expect(server.connectionsAccepted == 1)
        }
    }

    @Test func aHeaderBlockLargerThanAFrameGoesInContinuationFrames() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key)
            defer { sink.shutdown() }
            let jwt = try sink.signer.currentToken().jwt
            // 20,000 bytes of one field: over the 16,384-byte frame size, under the fake's header-list limit.
            let padding = String(repeating: "p", count: 20_000)
            let head = APNsRequestHead(fields: [
                ("authorization", "bearer " + jwt), ("apns-push-type", "liveactivity"), ("apns-topic", F.topic),
                ("apns-priority", "10"), ("x-padding", padding),
            ])
            let body = ByteBuffer(bytes: F.payload().bytes)
            let exchanges = await sink.pool.send([
                APNsRequest(head: head, path: "/3/device/" + F.token(1), apnsID: "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a11", body: body),
                APNsRequest(head: head, path: "/3/device/" + F.token(2), apnsID: "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a12", body: body),
            ])
            #expect(exchanges.count == 2)
            for exchange in exchanges {
                guard case .answered(let response) = exchange else {
                    Issue.record("no answer: \(exchange)")
                    continue
                }
                #expect(response.status == 200)
                #expect(response.headers.first(name: "apns-id")?.hasPrefix("8e7b0f6c") == true)
            }
            #expect(Set(server.accepted.map(\.token)) == [F.token(1), F.token(2)])
        }
    }

    @Test func anyPathAndFieldsGoThroughTheSameConnections() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key)
            defer { sink.shutdown() }
            let jwt = try sink.signer.currentToken().jwt
            // A GET without a body, and a POST to a path the fake does not serve: answered as APNs would.
            let get = APNsRequestHead(method: "GET", fields: [("authorization", "bearer " + jwt)])
            let post = APNsRequestHead(fields: [("authorization", "bearer " + jwt), ("apns-push-type", "liveactivity")])
            let exchanges = await sink.pool.send([
                APNsRequest(head: get, path: "/3/device/" + F.token(3), apnsID: nil, body: ByteBuffer()),
                APNsRequest(head: post, path: "/2/unknown", apnsID: nil, body: ByteBuffer(string: "{}")),
            ])
            let statuses = exchanges.map { exchange -> Int? in
                if case .answered(let response) = exchange { return response.status }
                return nil
            }
            #expect(statuses == [405, 404])
            let reasons = exchanges.map { exchange -> String? in
                if case .answered(let response) = exchange { return APNsAnswer.reason(fromBody: response.body) }
                return nil
            }
            #expect(reasons == ["MethodNotAllowed", "BadPath"])
            #expect(server.log.map(\.status) == [405, 404])
        }
    }

    // MARK: - The frame and header-block readers both ends share (HTTP2Wire), without I/O

    /// A header block of `fields` as HTTP2Wire writes them.
    private static func block(_ fields: [(String, String)]) -> ByteBuffer {
        var buffer = ByteBuffer()
        for (name, value) in fields { HTTP2Wire.writeField(name: name, value: value, into: &buffer) }
        return buffer
    }

    private static func frame(_ type: HTTP2Wire.FrameType, flags: UInt8, stream: Int32, _ payload: ByteBuffer) -> ByteBuffer {
        var buffer = ByteBuffer()
        HTTP2Wire.writeFrameHeader(into: &buffer, length: payload.readableBytes, type: type, flags: flags, stream: stream)
        buffer.writeImmutableBuffer(payload)
        return buffer
    }

    @Test func framesArrivingInPiecesAreTakenWholeAndInOrder() throws {
        var wire = Self.frame(.headers, flags: HTTP2Wire.Flag.endHeaders, stream: 1, Self.block([(":status", "200")]))
        wire.writeImmutableBuffer(Self.frame(.data, flags: HTTP2Wire.Flag.endStream, stream: 1, ByteBuffer(string: "{}")))
        var reader = HTTP2Wire.FrameReader()
        var frames: [HTTP2Wire.Frame] = []
        // One byte per read: nothing is taken before its last byte is in.
        while let byte = wire.readSlice(length: 1) {
            var piece = byte
            reader.append(&piece)
            while let frame = try reader.next(maxFrameSize: HTTP2Wire.defaultMaxFrameSize) { frames.append(frame) }
            reader.endRead()
        }
        #expect(frames.map(\.type) == [HTTP2Wire.FrameType.headers.rawValue, HTTP2Wire.FrameType.data.rawValue])
        #expect(frames.last.map { String(buffer: $0.payload) } == "{}")
        #expect(frames.last?.has(HTTP2Wire.Flag.endStream) == true)
    }

    @Test func aFrameOverTheLimitIsAFrameSizeError() throws {
        var reader = HTTP2Wire.FrameReader()
        var wire = Self.frame(.data, flags: 0, stream: 1, ByteBuffer(repeating: 0, count: 100))
        reader.append(&wire)
        #expect(throws: HTTP2Wire.WireError.self) { try reader.next(maxFrameSize: 99) }
        var other = HTTP2Wire.FrameReader()
        var preface = ByteBuffer(bytes: HTTP2Wire.preface.prefix(10))
        other.append(&preface)
        #expect(other.readPreface() == nil, "not all of it yet")
        var rest = ByteBuffer(bytes: HTTP2Wire.preface.dropFirst(10))
        other.append(&rest)
        #expect(other.readPreface() == true)
    }

    @Test func aHeaderBlockInContinuationFramesIsDecodedOnceWhole() throws {
        var whole = Self.block([(":status", "400"), ("apns-id", "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a11"), ("content-type", "application/json")])
        let first = whole.readSlice(length: 10)!
        let second = whole.readSlice(length: 10)!
        var reader = HTTP2Wire.HeaderBlockReader()
        let headers = HTTP2Wire.Frame(type: HTTP2Wire.FrameType.headers.rawValue, flags: 0, streamID: 3, payload: first)
        let middle = HTTP2Wire.Frame(type: HTTP2Wire.FrameType.continuation.rawValue, flags: 0, streamID: 3, payload: second)
        let last = HTTP2Wire.Frame(
            type: HTTP2Wire.FrameType.continuation.rawValue, flags: HTTP2Wire.Flag.endHeaders, streamID: 3, payload: whole)
        #expect(try reader.read(headers) == nil)
        #expect(try reader.read(middle) == nil)
        let ping = HTTP2Wire.Frame(type: HTTP2Wire.FrameType.ping.rawValue, flags: 0, streamID: 0, payload: ByteBuffer(repeating: 0, count: 8))
        #expect(reader.takes(ping), "while a block is open, every frame is the block reader's")
        let block = try #require(try reader.read(last))
        #expect(block.stream == 3 && !block.endStream)
        #expect(block.headers.first(name: ":status") == "400")
        #expect(block.headers.first(name: "apns-id") == "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a11")
        #expect(!reader.takes(ping), "the block is done")
    }

    @Test func anInterruptedHeaderBlockOrAStrayContinuationIsAProtocolError() throws {
        let block = Self.block([(":status", "200")])
        var reader = HTTP2Wire.HeaderBlockReader()
        let open = HTTP2Wire.Frame(type: HTTP2Wire.FrameType.headers.rawValue, flags: 0, streamID: 1, payload: block)
        #expect(try reader.read(open) == nil)
        let otherStream = HTTP2Wire.Frame(
            type: HTTP2Wire.FrameType.continuation.rawValue, flags: HTTP2Wire.Flag.endHeaders, streamID: 3, payload: block)
        #expect(throws: HTTP2Wire.WireError.self) { try reader.read(otherStream) }
        var fresh = HTTP2Wire.HeaderBlockReader()
        #expect(throws: HTTP2Wire.WireError.self) { try fresh.read(otherStream) }
    }
}
