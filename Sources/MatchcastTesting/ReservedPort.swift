#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A loopback TCP port held by a socket that is bound but never listens: a connection to it is refused at once,
/// and no other server (another test's, running in parallel) can take the port while it is held.
/// `free()` gives a port for a child process that must bind it itself.
public final class ReservedPort: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let port: Int
    private let socket: Int32

    /// Holds a port the kernel picks (from its ephemeral range).
    public convenience init() throws {
        try self.init(port: 0)
    }

    private init(port wanted: Int) throws {
        #if canImport(Glibc)
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(wanted)).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard named else {
            close(fd)
            throw Failure(description: "cannot bind a loopback port")
        }
        socket = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    /// A port for a child process to bind: bindable a moment ago, never handed out twice by this process, and
    /// outside the kernel's ephemeral ranges (Linux 32768–60999, macOS 49152–65535). A port the kernel picked would
    /// be let go before the child binds it, and any server of this process binding port 0 meanwhile (tests run in
    /// parallel) could be given the same one: the child then fails with "Address already in use".
    public static func free() throws -> Int {
        for _ in 0..<1000 {
            let port = Int.random(in: 20_000..<32_768)
            guard handedOut.withLock({ $0.insert(port).inserted }) else { continue }
            if let probe = try? ReservedPort(port: port) { return probe.port }  // bound, then let go with `probe`
        }
        throw Failure(description: "no free loopback port in 20000-32767")
    }

    private static let handedOut = Mutex<Set<Int>>([])
}
