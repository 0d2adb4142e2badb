#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APNsPeer
import ArgumentParser
import Foundation
import Synchronization

/// `matchcast-fake-apns`: the APNs peer (`APNsPeer`, on swift-nio-http2) as a process of its own, for
/// `matchcast-bench serve --sink apns` or by hand. It is not part of the shipped `matchcast`.
///
///     matchcast-fake-apns --cert server.pem --key server-key.pem [--port 0] [--ready-file F] [--report]
///                         [--threads 1] [--max-concurrent-streams 1000] [--unregistered-share 0] [--stream-channels]
///
/// It answers at the HTTP/2 frame level (`APNsPeer.Configuration.frameLevel`): every stream handled on its connection
/// from NIOHTTP2Handler's frames, not in a child channel per stream, so that a benchmark measures serve rather than
/// the fake, and without NIOHTTP2's validation of header blocks (its own checks of a request's shape stay).
/// `--stream-channels` runs the tests' peer as it is (a child channel per stream, header blocks validated).
///
/// Every request of the right shape is answered 200, except a share of tokens (chosen by a hash of
/// the token) answered 410 `Unregistered`. With `--ready-file` it writes its port there once it
/// listens. With `--report` it writes one NDJSON line per 200 answer to stdout, in the fields
/// `bench serve` reads from serve's stdout sink (`activityId` for starts, `target.value`,
/// `apns.priority`, the payload's `event`), written in batches every millisecond.
@main
struct FakeAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "matchcast-fake-apns",
        abstract: "A fake APNs on swift-nio-http2, for `matchcast-bench serve --sink apns` or by hand.")

    @Option(help: "The server certificate chain (PEM).") var cert: String
    @Option(help: "The server certificate's private key (PEM).") var key: String
    @Option(help: "The port to listen on (0: a free one).") var port = 0
    @Option(help: "A file to write the port to once listening.") var readyFile: String?
    @Flag(help: "One NDJSON line per 200 answer on stdout.") var report = false
    @Option(help: "Event-loop threads.") var threads = 1
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS announced.") var maxConcurrentStreams = 1000
    @Option(help: "The share of tokens (0...1, by a hash of the token) answered 410 Unregistered.")
    var unregisteredShare = 0.0
    @Flag(help: "Each stream in a child channel of NIOHTTP2's multiplexer (the tests' peer), not answered from the connection's frames.")
    var streamChannels = false

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard threads >= 1, maxConcurrentStreams >= 1 else {
            throw ValidationError("--threads and --max-concurrent-streams must be at least 1")
        }
        guard (0...1).contains(unregisteredShare) else { throw ValidationError("--unregistered-share must be 0...1") }
    }

    func run() async throws {
        try await serve(self)
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("matchcast-fake-apns: \(message)\n".utf8))
    exit(2)
}

/// One NDJSON line per answer, gathered under a lock and written by a thread of its own.
final class ReportWriter: Sendable {
    private let pending = Mutex<[UInt8]>([])

    func add(_ request: APNsPeer.Request) {
        var line: [UInt8] = []
        line.reserveCapacity(200)
        line += Array(#"{"activityId":""#.utf8)
        let event = Self.string(after: Self.eventKey, in: request.body, last: true) ?? []
        if event == Array("start".utf8) { line += Self.string(after: Self.activityKey, in: request.body, last: false) ?? [] }
        line += Array(#"","target":{"kind":"apns","value":""#.utf8)
        line += Array((request.token ?? "").utf8)
        line += Array(#""},"apns":{"priority":"#.utf8)
        line += Array(String(request.priority ?? 0).utf8)
        line += Array(#"},"payload":{"event":""#.utf8)
        line += event
        line += Array("\"}}\n".utf8)
        pending.withLock { $0 += line }
    }

    func start() {
        let thread = Thread { [self] in
            while true {
                let bytes = pending.withLock { buffer -> [UInt8] in
                    defer { buffer.removeAll(keepingCapacity: true) }
                    return buffer
                }
                if bytes.isEmpty {
                    usleep(1000)
                    continue
                }
                bytes.withUnsafeBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let written = write(1, raw.baseAddress! + offset, raw.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            exit(0)  // the reader went away
                        }
                        offset += written
                    }
                }
            }
        }
        thread.start()
    }

    private static let eventKey = Array(#""event":""#.utf8)
    private static let activityKey = Array(#""activityId":""#.utf8)

    /// The characters after `key` up to the next quote (the first or last occurrence of `key`).
    static func string(after key: [UInt8], in body: [UInt8], last: Bool) -> [UInt8]? {
        guard body.count >= key.count else { return nil }
        func matches(at start: Int) -> Bool {
            var offset = 0
            while offset < key.count, body[start + offset] == key[offset] { offset += 1 }
            return offset == key.count
        }
        var start = last ? body.count - key.count : 0
        while start >= 0, start <= body.count - key.count {
            if matches(at: start) {
                let from = start + key.count
                guard let end = body[from...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
                return Array(body[from..<end])
            }
            start += last ? -1 : 1
        }
        return nil
    }
}

/// A stable share of tokens, by FNV-1a of the token.
func isInShare(_ token: String, _ share: Double) -> Bool {
    guard share > 0 else { return false }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in token.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return Double(hash % 10_000) < share * 10_000
}

func serve(_ options: FakeAPNsCommand) async throws {
    let certificate: String
    let key: String
    do {
        certificate = try String(contentsOfFile: options.cert, encoding: .utf8)
        key = try String(contentsOfFile: options.key, encoding: .utf8)
    } catch {
        fail("cannot read --cert or --key: \(error.localizedDescription)")
    }
    var configuration = APNsPeer.Configuration(certificateChainPEM: certificate, privateKeyPEM: key)
    configuration.recording = false
    configuration.threads = options.threads
    configuration.maxConcurrentStreams = options.maxConcurrentStreams
    configuration.frameLevel = !options.streamChannels
    // The tests check the client's header blocks against NIOHTTP2's validation; the benchmark's fake keeps its own
    // shape checks of each request and spends no time on RFC 9113's grammar.
    configuration.validatesHeaderBlocks = options.streamChannels
    let share = options.unregisteredShare
    configuration.answer = { request in
        isInShare(request.token ?? "", share) ? .error(status: 410, reason: "Unregistered") : .ok
    }
    if options.report {
        let writer = ReportWriter()
        writer.start()
        configuration.onAnswer = { request, status in if status == 200 { writer.add(request) } }
    }
    let peer: APNsPeer
    do {
        peer = try await APNsPeer.start(configuration, port: options.port)
    } catch {
        fail("cannot start: \(error)")
    }
    if let readyFile = options.readyFile {
        do {
            try "\(peer.port)\n".write(toFile: readyFile + ".tmp", atomically: false, encoding: .utf8)
            try FileManager.default.moveItem(atPath: readyFile + ".tmp", toPath: readyFile)
        } catch {
            fail("cannot write \(readyFile): \(error.localizedDescription)")
        }
    }
    FileHandle.standardError.write(Data("matchcast-fake-apns: listening on \(peer.url)\n".utf8))
    while true { try await Task.sleep(for: .seconds(3600)) }
}
