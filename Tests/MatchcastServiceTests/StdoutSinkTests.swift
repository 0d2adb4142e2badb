#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastTesting
import Synchronization
import Testing

/// The stdout sink (`--sink stdout`, what `replay ... > file` writes) into a real file: the bytes are exactly the
/// NDJSON `Delivery.appendJSON` gives, one line per delivery, whatever the batch sizes and however many batches
/// arrive at once.
@Suite("stdout sink: NDJSON into a file")
struct StdoutSinkTests {
    /// A new file in the temporary folder, open for writing; closed and removed when let go.
    final class OutputFile {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-sink-\(UUID().uuidString).ndjson").path
        let descriptor: Int32

        init() throws {
            descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0, "cannot create \(path)")
        }

        deinit {
            close(descriptor)
            unlink(path)
        }

        func contents() throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    }

    /// The golden recording (or its first `observations`) replayed to `followers` followers into `sinks`.
    static func replayGolden(followers: Int, observations: Int? = nil, into sinks: [any DeliverySink]) async throws {
        let parse = RecordingReader.read(try Data(contentsOf: GoldenReplayTests.recordingURL))
        try #require(parse.problems.isEmpty, "\(parse.problems)")
        _ = try await ReplayRunner(
            lines: Array(parse.lines.prefix(observations ?? parse.lines.count)), options: ReplayOptions(followers: followers, seed: 42), sinks: sinks,
            logger: Logger(label: "stdout-sink-test")
        ).run()
    }

    /// The NDJSON the sink writes for `batch` alone.
    static func ndjson(of batch: [Delivery]) async throws -> [UInt8] {
        let alone = CapturingSink()
        try await alone.deliver(batch)
        return alone.ndjson
    }

    /// Expects `written` to be `expected`, byte for byte; compared outside `#expect`, so a mismatch does not print
    /// megabytes.
    static func expectSame(_ written: [UInt8], _ expected: [UInt8], _ what: String,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        let same = written == expected
        #expect(same, "\(written.count) bytes written, \(expected.count) in \(what)", sourceLocation: sourceLocation)
    }

    @Test("the golden replay written through the sink into a file is the golden output, byte for byte")
    func goldenIntoAFile() async throws {
        let file = try OutputFile()
        try await Self.replayGolden(followers: 2, into: [StdoutSink(fileDescriptor: file.descriptor)])
        let expected = [UInt8](try Data(contentsOf: GoldenReplayTests.outputURL))
        let written = try file.contents()
        Self.expectSame(written, expected, "Golden/football.replay.ndjson")
    }

    @Test("fan-outs many write chunks long: every delivery one whole line, in order (written at once, and behind as replay does)",
          arguments: [0, ReplayRunner.stdoutWriteBehind])
    func batchesLongerThanAChunk(writeBehind: Int) async throws {
        let file = try OutputFile()
        let capture = CapturingSink()
        // 600 followers: each fan-out is about 400 KB, more than one 256 KiB write.
        try await Self.replayGolden(
            followers: 600, into: [capture, StdoutSink(fileDescriptor: file.descriptor, writeBehind: writeBehind)])
        // `run()` returned after the sink's last write: the file is whole now.
        let written = try file.contents()
        let expected = capture.ndjson
        #expect(expected.count > 20_000_000)
        Self.expectSame(written, expected, "\(capture.deliveries.count) deliveries")
    }

    @Test("batches handed over at once are each written whole, none lost")
    func concurrentBatches() async throws {
        let capture = CapturingSink()
        try await Self.replayGolden(followers: 200, into: [capture])
        // 16 batches of about 1.3 MB each (several write chunks), all delivered at the same time.
        let all = capture.deliveries
        let size = all.count / 16 + 1
        let batches = stride(from: 0, to: all.count, by: size).map { Array(all[$0..<min($0 + size, all.count)]) }
        #expect(batches.count == 16)
        let file = try OutputFile()
        let sink = StdoutSink(fileDescriptor: file.descriptor)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for batch in batches { group.addTask { try await sink.deliver(batch) } }
            try await group.waitForAll()
        }
        // The file is the batches' bytes one after the other, in some order: each batch's lines stay together.
        var expected: [[UInt8]] = []
        for batch in batches {
            expected.append(try await Self.ndjson(of: batch))
        }
        let written = try file.contents()
        var offset = 0
        while offset < written.count {
            let next = expected.firstIndex { batch in
                offset + batch.count <= written.count && written[offset..<(offset + batch.count)].elementsEqual(batch)
            }
            guard let next else {
                Issue.record("at byte \(offset) of \(written.count), no whole batch starts: batches were interleaved or cut")
                return
            }
            offset += expected.remove(at: next).count
        }
        #expect(expected.isEmpty, "\(expected.count) batches missing")
    }

    @Test("written behind: deliver returns before the reader has read, and waits once more batches than allowed are queued",
          .timeLimit(.minutes(1)))
    func writeBehindIsBounded() async throws {
        let capture = CapturingSink()
        try await Self.replayGolden(followers: 20, into: [capture])
        // Two batches, each more than a pipe holds (64 KB on Linux): neither can be written until the reader reads.
        let half = capture.deliveries.count / 2
        let batches = [Array(capture.deliveries[..<half]), Array(capture.deliveries[half...])]
        var expected: [UInt8] = []
        for batch in batches {
            let lines = try await Self.ndjson(of: batch)
            #expect(lines.count > 65_536)
            expected += lines
        }
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (reader, writer) = (ends[0], ends[1])
        defer { close(reader) }
        let sink = StdoutSink(fileDescriptor: writer, writeBehind: 1)
        // Returns with its batch queued: written at once, it would wait for a reader that has not started.
        try await sink.deliver(batches[0])
        let taken = Mutex(false)
        let second = Task {
            try await sink.deliver(batches[1])
            taken.withLock { $0 = true }
        }
        // Two queued, one allowed: the second waits until the first is written, which needs the reader.
        try await Task.sleep(for: .milliseconds(200))
        #expect(!taken.withLock { $0 }, "the second batch was taken while the first was still unwritten")
        // The reader starts: everything arrives, in order.
        let reading = Task.detached { () -> [UInt8] in
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count <= 0 { return bytes }
                bytes += buffer[..<count]
            }
        }
        try await second.value
        try await sink.flush()
        close(writer)
        let received = await reading.value
        Self.expectSame(received, expected, "the batches handed over")
    }

    @Test("""
        a descriptor that cannot be written to: the batch fails, naming why (stdout and pretty sinks); written behind, \
        flush and every later deliver throw it; a replay into it fails
        """)
    func unwritableDescriptor() async throws {
        let capture = CapturingSink()
        try await Self.replayGolden(followers: 1, into: [capture])
        let readOnly = open("/dev/null", O_RDONLY)
        try #require(readOnly >= 0)
        defer { close(readOnly) }
        let batch = Array(capture.deliveries.prefix(3))
        for sink: any DeliverySink in [StdoutSink(fileDescriptor: readOnly), PrettySink(fileDescriptor: readOnly)] {
            let error = await #expect(throws: SinkError.self, "\(sink.name)") { try await sink.deliver(batch) }
            #expect(error?.description == "write failed: \(String(cString: strerror(EBADF)))", "\(sink.name)")
        }
        // An empty batch writes nothing and cannot fail.
        try await StdoutSink(fileDescriptor: readOnly).deliver([])

        // Written behind, the failure comes after `deliver` returned: `flush` and every later `deliver` throw it.
        let behind = StdoutSink(fileDescriptor: readOnly, writeBehind: 2)
        try await behind.deliver(batch)
        let flushed = await #expect(throws: SinkError.self) { try await behind.flush() }
        #expect(flushed?.description == "write failed: \(String(cString: strerror(EBADF)))")
        await #expect(throws: SinkError.self) { try await behind.deliver(batch) }
        // A whole replay into it fails with the write's error rather than ending as if all was written.
        await #expect(throws: SinkError.self) {
            try await Self.replayGolden(followers: 2, into: [StdoutSink(fileDescriptor: readOnly, writeBehind: 4)])
        }
        // Written before `deliver` returns, each failed batch stays with the relay, retried with the next: a replay
        // says at its end how many never left, whether the match is still on or has ended.
        for observations in [12, nil] {
            let replayError = await #expect(throws: ReplayError.self, "\(observations.map { "\($0) observations" } ?? "whole match")") {
                try await Self.replayGolden(followers: 2, observations: observations, into: [StdoutSink(fileDescriptor: readOnly)])
            }
            if case .undelivered(let count)? = replayError { #expect(count > 0) }
        }
    }
}
