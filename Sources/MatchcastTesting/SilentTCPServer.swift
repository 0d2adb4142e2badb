import NIOCore
import NIOPosix
import Synchronization

/// A TCP server on `127.0.0.1` (a free port) that accepts connections, reads whatever comes and
/// never writes a byte: a TLS handshake with it never completes. For deadline tests.
public final class SilentTCPServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel
    private let accepted: Accepted

    private final class Accepted: Sendable {
        let channels = Mutex<[any Channel]>([])
    }

    private final class Discard: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }

    private init(port: Int, channel: any Channel, accepted: Accepted) {
        self.port = port
        self.channel = channel
        self.accepted = accepted
    }

    /// `https://127.0.0.1:<port>`, for a client that should try TLS against it.
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Connections accepted so far.
    public var connections: Int { accepted.channels.withLock { $0.count } }

    public static func start() async throws -> SilentTCPServer {
        let accepted = Accepted()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.channels.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Discard()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentTCPServer(port: channel.localAddress?.port ?? 0, channel: channel, accepted: accepted)
    }

    /// Stops listening and closes every accepted connection.
    public func stop() async {
        try? await channel.close()
        for child in accepted.channels.withLock({ $0 }) { try? await child.close() }
    }
}
