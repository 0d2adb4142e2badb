#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Crypto
import Foundation
import MatchcastCLI
import MatchcastTesting
import Synchronization

/// What the APNs benchmark asks of the fake APNs, whether it runs in this process or in a child
/// process of its own (`matchcast-bench fake-apns`, driven over a pipe).
protocol FakeAPNsProbe: Sendable {
    var url: String { get }
    var caPEM: String { get }
    /// The benchmark's error mix (see `FakeAPNsServer.failShare`).
    func failShare(invalid: Double, throttled: Double)
    /// Starts noting arrival times.
    func recordArrivals()
    /// Arrival times (monotonic nanoseconds, comparable across processes) since the last call, and the counts now.
    func take() -> FakeAPNsFigures
    /// The counts now.
    func figures() -> FakeAPNsFigures
    func stop() async
}

/// The fake's counts at one moment.
struct FakeAPNsFigures: Codable, Sendable {
    var arrivals: [Int64] = []
    var statusCounts: [Int: Int] = [:]
    var accepted = 0
    var requests = 0
    var duplicates = 0
    var connections = 0
    var verifications = 0
    var peakStreams = 0
    /// The fake's own CPU time (user + system, µs) when it runs in a process of its own; nil in process.
    var cpuMicroseconds: Int64?
}

/// Monotonic time as plain nanoseconds, the same clock in every process of the machine.
enum MonotonicTime {
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// `instant` on the monotonic clock (both clocks read now; their difference carried over).
    static func of(_ instant: ContinuousClock.Instant) -> Int64 {
        let elapsed = instant.duration(to: .now)
        let (seconds, attoseconds) = elapsed.components
        return now() - (seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// The fake in this process.
struct InProcessFakeAPNs: FakeAPNsProbe {
    let server: FakeAPNsServer

    var url: String { server.url }
    var caPEM: String { server.certificates.caPEM }
    func failShare(invalid: Double, throttled: Double) { server.failShare(invalid: invalid, throttled: throttled) }
    func recordArrivals() { server.recordArrivals() }

    func take() -> FakeAPNsFigures {
        var figures = figures()
        figures.arrivals = server.takeArrivals().map(MonotonicTime.of)
        return figures
    }

    func figures() -> FakeAPNsFigures {
        FakeAPNsFigures(
            statusCounts: server.statusCounts, accepted: server.acceptedCount, requests: server.requestCount,
            duplicates: server.duplicates, connections: server.connectionsAccepted,
            verifications: server.providerTokenVerifications, peakStreams: server.peakConcurrentStreams)
    }

    func stop() async { await server.stop() }
}

/// The first line `matchcast-bench fake-apns` prints: where it listens and the CA to trust.
private struct FakeAPNsHello: Codable {
    var port: Int
    var caPEM: String
}

/// The fake in a child process (`matchcast-bench fake-apns`), asked by one line per command on its
/// standard input and answering one JSON line on its standard output.
final class ChildProcessFakeAPNs: FakeAPNsProbe {
    let url: String
    let caPEM: String
    private let process: Process
    private let input: FileHandle
    private let reader: LineReader
    private let lock = Mutex(())

    /// Starts `executable fake-apns` trusting `publicKeyDER` (base64) and waits for its port.
    init(executable: String, publicKeyDER: String, keyId: String, teamId: String, threads: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "fake-apns", "--public-key", publicKeyDER, "--key-id", keyId, "--team-id", teamId, "--threads", "\(threads)",
        ]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        self.process = process
        input = stdin.fileHandleForWriting
        reader = LineReader(stdout.fileHandleForReading)
        guard let line = reader.next(), let hello = try? JSONDecoder().decode(FakeAPNsHello.self, from: Data(line.utf8)) else {
            process.terminate()
            throw CommandFailure("the fake APNs process did not start")
        }
        url = "https://127.0.0.1:\(hello.port)"
        caPEM = hello.caPEM
    }

    private func ask(_ command: String) -> String? {
        lock.withLock { _ in
            input.write(Data((command + "\n").utf8))
            return reader.next()
        }
    }

    func failShare(invalid: Double, throttled: Double) { _ = ask("mix \(invalid) \(throttled)") }
    func recordArrivals() { _ = ask("record") }

    func take() -> FakeAPNsFigures { decode(ask("take")) }
    func figures() -> FakeAPNsFigures { decode(ask("figures")) }

    private func decode(_ line: String?) -> FakeAPNsFigures {
        line.flatMap { try? JSONDecoder().decode(FakeAPNsFigures.self, from: Data($0.utf8)) } ?? FakeAPNsFigures()
    }

    func stop() async {
        try? input.close()
        process.waitUntilExit()
    }
}

/// Lines from a file handle, blocking.
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    /// The next line without its newline; nil at the end of input.
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let data = handle.availableData
            guard !data.isEmpty else { return nil }
            buffer.append(contentsOf: data)
        }
    }
}

/// CPU time (user + system) of this process so far, in microseconds.
func processCPUMicroseconds() -> Int64 {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
        + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
}

/// `matchcast-bench fake-apns`: the fake APNs of `MatchcastTesting` in a process of its own, for
/// `matchcast-bench fanout --sink apns` (which starts it). It prints `{"port","caPEM"}` as one line, then
/// answers commands on standard input, one JSON line each: `mix INVALID THROTTLED`, `record`
/// (start noting arrivals), `take` (arrivals so far and counts), `figures` (counts). It stops at
/// the end of its input.
struct FakeAPNsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fake-apns",
        abstract: "The benchmark's fake APNs in a process of its own (started by bench fanout --sink apns).",
        discussion: """
            Listens on 127.0.0.1 (a free port) with a throwaway certificate, ALPN h2, 1000 streams per \
            connection, and accepts provider tokens signed by the key whose public half is given. Prints \
            {"port","caPEM"} on one line, then answers commands on stdin until it ends.

            Example:
              matchcast-bench fake-apns --public-key MFkwEwYHKoZIzj0CAQ... --key-id ABC123DEFG --team-id DEF123GHIJ
            """,
        shouldDisplay: false)

    @Option(help: "The provider-token key's public half: base64 of its DER (SubjectPublicKeyInfo).")
    var publicKey: String

    @Option(help: "The key id the provider tokens must name.")
    var keyId: String

    @Option(help: "The team id the provider tokens must name.")
    var teamId: String

    @Option(help: "Event-loop threads.")
    var threads = 2

    func run() async throws {
        guard let der = Data(base64Encoded: publicKey), let key = try? P256.Signing.PublicKey(derRepresentation: der) else {
            throw ValidationError("--public-key is not a base64 P-256 public key")
        }
        let server = try await FakeAPNsServer.start(
            publicKey: key, keyId: keyId, teamId: teamId, maxConcurrentStreams: 1000, recording: false, threads: threads)
        let probe = InProcessFakeAPNs(server: server)
        let encoder = JSONEncoder()
        func reply(_ data: Data) {
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
        reply(try encoder.encode(FakeAPNsHello(port: server.port, caPEM: server.certificates.caPEM)))
        while let line = readLine() {
            let words = line.split(separator: " ")
            switch words.first {
            case "mix" where words.count == 3:
                probe.failShare(invalid: Double(words[1]) ?? 0, throttled: Double(words[2]) ?? 0)
                reply(Data("{}".utf8))
            case "record":
                probe.recordArrivals()
                reply(Data("{}".utf8))
            case "take":
                var figures = probe.take()
                figures.cpuMicroseconds = processCPUMicroseconds()
                reply(try encoder.encode(figures))
            case "figures":
                var figures = probe.figures()
                figures.cpuMicroseconds = processCPUMicroseconds()
                reply(try encoder.encode(figures))
            default:
                reply(Data(#"{"error":"unknown command"}"#.utf8))
            }
        }
        await server.stop()
    }
}
