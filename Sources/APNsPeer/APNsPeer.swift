import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A fake APNs built on swift-nio-http2's server side (`NIOHTTP2Handler` and its stream multiplexer,
/// NIOHPACK's encoder with Huffman coding and the dynamic table): it shares no framing, HPACK or
/// flow-control code with the project's hand-framed APNs client, so a test against it checks that
/// client against another implementation of RFC 9113 rather than against its own reading of it.
///
/// It listens on `127.0.0.1` over TLS with ALPN `h2` (the client requires both), answers each
/// request as `Configuration.answer` says (200 with the request's `apns-id` by default, after a few
/// shape checks of its own), and counts. A test can make it change SETTINGS mid-connection, send
/// GOAWAY with streams in flight, hold answers, reset streams, split header blocks into CONTINUATION
/// frames and push its HPACK dynamic table into eviction (`fillerHeaderBytes`).
public final class APNsPeer: Sendable {
    public struct Configuration: Sendable {
        /// PEM of the certificate chain and key to present (a client must trust the chain's CA).
        public var certificateChainPEM: String
        public var privateKeyPEM: String
        /// SETTINGS_MAX_CONCURRENT_STREAMS advertised at the start.
        public var maxConcurrentStreams = 1000
        /// SETTINGS_INITIAL_WINDOW_SIZE advertised at the start: how much of a body a stream may
        /// send before this server hands window back (it does, as it reads, up to this size).
        public var initialWindowSize = 65_535
        /// The connection window this server keeps topping up to (at least the protocol's 65,535 at first).
        public var connectionWindow = 65_535
        /// When set, every header block this server sends goes out as HEADERS plus CONTINUATION
        /// frames of at most this many bytes each.
        public var headerFragmentBytes: Int?
        /// When above 0, every answer carries an `x-filler` header of this many random characters,
        /// indexed, so the encoder's dynamic table fills and evicts.
        public var fillerHeaderBytes = 0
        /// Keeps every request (with its body) in `requests`; off for the benchmark.
        public var recording = true
        /// Event-loop threads of its own.
        public var threads = 1
        /// Streams handled on their connection from NIOHTTP2Handler's frames (`FrameHandler`), not each in a child
        /// channel of NIOHTTP2's multiplexer: several times less work per request, for a benchmark's fake. Every
        /// answer, reset, hold, SETTINGS change and GOAWAY works the same; `headerFragmentBytes` and
        /// `fillerHeaderBytes` too.
        public var frameLevel = false
        /// NIOHTTP2's checks of every header block against RFC 9113's rules (field names, pseudo-headers,
        /// content-length). On for the tests, which check the client against them; a benchmark's fake may leave
        /// them to the tests and keep its own shape checks.
        public var validatesHeaderBlocks = true
        /// The answer to a request that passed the shape checks.
        public var answer: @Sendable (Request) -> Answer = { _ in .ok }
        /// Told of every answer sent (not of held, reset or dropped requests), on an event loop.
        public var onAnswer: (@Sendable (Request, _ status: Int) -> Void)?

        public init(certificateChainPEM: String, privateKeyPEM: String) {
            self.certificateChainPEM = certificateChainPEM
            self.privateKeyPEM = privateKeyPEM
        }
    }

    /// A request as this server read it.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// The device token from `/3/device/<token>`, if the path has that shape.
        public var token: String?
        public var apnsID: String?
        public var pushType: String?
        public var topic: String?
        public var priority: Int?
        public var authorization: String?
        public var body: [UInt8]
        /// 1 for the first connection accepted, and so on.
        public var connection: Int
        public var stream: Int
    }

    /// What to do with a request.
    public enum Answer: Sendable, Equatable {
        /// 200, no body.
        case ok
        /// An error status with `{"reason": …}`.
        case error(status: Int, reason: String)
        /// RST_STREAM with this HTTP/2 error code (7 REFUSED_STREAM, 2 INTERNAL_ERROR, …), no answer.
        case reset(code: Int)
    }

    public let port: Int
    let state: PeerState
    private let serverChannel: any Channel
    private let group: MultiThreadedEventLoopGroup

    private init(port: Int, state: PeerState, serverChannel: any Channel, group: MultiThreadedEventLoopGroup) {
        self.port = port
        self.state = state
        self.serverChannel = serverChannel
        self.group = group
    }

    /// The endpoint to send to.
    public var url: String { "https://127.0.0.1:\(port)" }

    public static func start(_ configuration: Configuration, port: Int = 0) async throws -> APNsPeer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
        do {
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(configuration.certificateChainPEM.utf8)).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(configuration.privateKeyPEM.utf8), format: .pem)))
            tls.applicationProtocols = ["h2"]
            let sslContext = try NIOSSLContext(configuration: tls)
            let state = PeerState(configuration: configuration)
            var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
            connectionConfiguration.initialSettings = [
                HTTP2Setting(parameter: .maxConcurrentStreams, value: configuration.maxConcurrentStreams),
                HTTP2Setting(parameter: .initialWindowSize, value: configuration.initialWindowSize),
                HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKLimits.maxHeaderListSize),
            ]
            connectionConfiguration.targetWindowSize = max(configuration.connectionWindow, 1)
            if !configuration.validatesHeaderBlocks {
                connectionConfiguration.headerBlockValidation = .disabled
                connectionConfiguration.contentLengthValidation = .disabled
            }
            var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
            streamConfiguration.targetWindowSize = configuration.initialWindowSize
            let connectionSettings = connectionConfiguration
            let streamSettings = streamConfiguration
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    let connection = state.accepted(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                        if let fragment = configuration.headerFragmentBytes {
                            try sync.addHandler(HeaderBlockSplitter(fragmentBytes: fragment))
                        }
                        if configuration.frameLevel {
                            try sync.addHandler(NIOHTTP2Handler(
                                mode: .server, connectionConfiguration: connectionSettings, streamConfiguration: streamSettings))
                            try sync.addHandler(FrameHandler(state: state, connection: connection))
                            return
                        }
                        _ = try sync.configureHTTP2Pipeline(
                            mode: .server, connectionConfiguration: connectionSettings,
                            streamConfiguration: streamSettings
                        ) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(StreamHandler(state: state, connection: connection))
                            }
                        }
                    }
                }
                .bind(host: "127.0.0.1", port: port).get()
            guard let bound = channel.localAddress?.port else {
                try? await channel.close()
                throw StartError()
            }
            return APNsPeer(port: bound, state: state, serverChannel: channel, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    /// Stops listening, closes every connection and its threads. Held requests are never answered.
    public func stop() async {
        try? await serverChannel.close()
        for connection in state.connectionList { try? await connection.channel.close() }
        try? await group.shutdownGracefully()
    }

    // MARK: - Misbehaving on purpose

    /// From now on requests are read (and counted) but not answered, until `release()`.
    public func hold() { state.setHolding(true) }

    /// Answers the held requests (those whose stream is still open) and every later one.
    public func release() { state.setHolding(false) }

    /// Sends a SETTINGS frame with `settings` on every open connection (and flushes it).
    public func changeSettings(_ settings: [(HTTP2SettingsParameter, Int)]) async throws {
        state.noteSettingsChange(settings)
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings(settings.map { HTTP2Setting(parameter: $0.0, value: $0.1) })))
        for connection in state.connectionList {
            try await connection.channel.writeAndFlush(frame)
        }
    }

    /// Sends GOAWAY (NO_ERROR) on every open connection, naming as the last stream processed the
    /// `keep`-th lowest stream now open on it (0 if fewer): the streams above it were not processed
    /// and are closed unanswered; the client must send them again elsewhere.
    /// Returns how many open streams each GOAWAY left unprocessed, in all.
    @discardableResult
    public func goAway(keep: Int) async throws -> Int {
        var dropped = 0
        for connection in state.connectionList {
            let open = connection.openStreamIDs.sorted()
            let last = keep > 0 && !open.isEmpty ? open[min(keep, open.count) - 1] : 0
            dropped += open.filter { $0 > last }.count
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(lastStreamID: HTTP2StreamID(last), errorCode: .noError, opaqueData: nil))
            try await connection.channel.writeAndFlush(frame)
        }
        return dropped
    }

    // MARK: - What it saw

    /// Requests read so far (answered, held, reset or not).
    public var requestCount: Int { state.counts.requests }
    /// Answers sent so far by status.
    public var statusCounts: [Int: Int] { state.counts.statuses }
    /// Streams reset so far.
    public var resets: Int { state.counts.resets }
    /// TCP connections accepted so far.
    public var connectionsAccepted: Int { state.counts.connections }
    /// The most streams open at once on one connection.
    public var peakOpenStreams: Int { state.counts.peakOpen }
    /// The most streams open on a connection when one more opened after the last `changeSettings`
    /// (counting that one); 0 if none opened since.
    public var peakOpenAtNewStreamSinceSettings: Int { state.counts.peakOpenSinceSettings }
    /// Requests read per `apns-id`.
    public var requestsByID: [String: Int] { state.counts.requestsByID }
    /// 200 answers per `apns-id`.
    public var acceptedByID: [String: Int] { state.counts.acceptedByID }
    /// Every request read, in order (with `recording` on).
    public var requests: [Request] { state.recorded }

    /// Returns once at least `count` requests were read; `timeout` bounds the wait.
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while requestCount < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    struct StartError: Error, CustomStringConvertible {
        var description: String { "the APNs peer did not start listening" }
    }
}

/// What this server accepts in a header list (it advertises it), well above any APNs request.
enum HPACKLimits {
    static let maxHeaderListSize = 64 << 10
}

extension APNsPeer.Request {
    /// The request a stream's header block and body make.
    init(headers: HPACKHeaders, body: [UInt8], connection: Int, stream: Int) {
        let path = headers.first(name: ":path") ?? ""
        let prefix = "/3/device/"
        self.init(
            method: headers.first(name: ":method") ?? "", path: path,
            token: path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil,
            apnsID: headers.first(name: "apns-id"), pushType: headers.first(name: "apns-push-type"),
            topic: headers.first(name: "apns-topic"), priority: headers.first(name: "apns-priority").flatMap { Int($0) },
            authorization: headers.first(name: "authorization"), body: body, connection: connection, stream: stream)
    }
}
