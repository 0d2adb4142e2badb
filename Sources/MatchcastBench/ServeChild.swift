#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// `matchcast serve` as a child process of `bench serve`: its stdout (the NDJSON of `--sink stdout`) goes
/// through a pipe to a `DeliveryTap`, its stderr to a log file.
final class ServeChild: @unchecked Sendable {
    let process: Process
    let tap: DeliveryTap
    let logPath: String
    private let reader: Thread

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    private init(process: Process, tap: DeliveryTap, logPath: String, reader: Thread) {
        self.process = process
        self.tap = tap
        self.logPath = logPath
        self.reader = reader
    }

    /// Starts `executable` with `arguments`, and this process's environment without its `MATCHCAST_*` settings (the
    /// benchmark alone configures the child) plus `environment`.
    static func start(
        executable: String, arguments: [String], environment: [String: String], directory: URL, logName: String,
        tap: DeliveryTap
    ) throws -> ServeChild {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MATCHCAST_") }
            .merging(environment) { _, new in new }
        process.currentDirectoryURL = directory
        let logPath = directory.appendingPathComponent(logName).path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        #if os(Linux)
        // A 1 MiB pipe (the unprivileged maximum) instead of 64 KiB: serve writes 256 KiB chunks.
        _ = fcntl(pipe.fileHandleForReading.fileDescriptor, 1031 /* F_SETPIPE_SZ */, 1 << 20)
        #endif
        process.standardOutput = pipe
        try process.run()
        // Foundation closes the parent's copy of the write end once the child runs, so EOF comes when it exits.
        let descriptor = pipe.fileHandleForReading.fileDescriptor
        let reader = Thread {
            tap.read(from: descriptor)
            _ = pipe  // the read end stays open until the child's output ends
        }
        reader.name = "bench-serve-stdout"
        reader.start()
        return ServeChild(process: process, tap: tap, logPath: logPath, reader: reader)
    }

    /// CPU time (user + system, all threads) the child has used, from `/proc/<pid>/stat`; nil where unknown.
    func cpuTime() -> Duration? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command's ")": field 3 (state) is fields[0], so utime (14) and stime (15) are 11 and 12.
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard ticks > 0 else { return nil }
        return .milliseconds((user + system) * 1000 / ticks)
        #else
        return nil
        #endif
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace`; waits until it has. Returns how it ended.
    @discardableResult
    func stop(grace: Duration = .seconds(10)) async -> String {
        guard process.isRunning else { return "had exited (status \(process.terminationStatus))" }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return "killed (SIGKILL after \(grace) of SIGTERM)"
        }
        process.waitUntilExit()
        return "exited after SIGTERM (status \(process.terminationStatus))"
    }

    /// The last lines of the child's log, for an error report.
    func logTail(_ lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}

/// Reads serve's NDJSON deliveries on a thread of its own, timestamps each `read()` as it returns (every
/// line in it gets that time) and classifies each line cheaply by byte search: the APNs event (`start`,
/// `update`, `end`: the last `"event":"` of the line, the payload's `aps.event`), the device (the benchmark's
/// tokens begin with the device's index in 8 hex digits), the APNs priority (10: a key event such as a goal; 5: a
/// routine update, e.g. a stale-date refresh) and, for starts, the activity id.
final class DeliveryTap: Sendable {
    enum Event: UInt8, Sendable {
        case start, update, end, other
    }

    struct Line: Sendable {
        /// `MonotonicTime` nanoseconds of the `read()` that brought the line's end.
        var time: Int64
        var event: Event
        /// From the target token's first 8 hex digits; -1 when it is not one of the benchmark's.
        var device: Int32
        /// `apns.priority`; 0 when missing.
        var priority: UInt8 = 0
        /// Starts only.
        var activityId: String?
    }

    private struct State: Sendable {
        var lines: [Line] = []
        var closed = false
        var unparsed = 0
        var firstUnparsed: String?
        var bytes = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Lines so far.
    var count: Int { state.withLock { $0.lines.count } }
    /// Whether serve's stdout ended (the child exited or closed it).
    var isClosed: Bool { state.withLock { $0.closed } }
    var bytes: Int { state.withLock { $0.bytes } }
    var unparsed: (count: Int, first: String?) { state.withLock { ($0.unparsed, $0.firstUnparsed) } }

    /// The lines from `start` on (a copy).
    func lines(from start: Int) -> [Line] {
        state.withLock { Array($0.lines[min(start, $0.lines.count)...]) }
    }

    /// Takes every line read so far, leaving none (a long run reads as it goes; `count` and cursors restart at 0).
    func drain() -> [Line] {
        state.withLock { state in
            defer { state.lines.removeAll(keepingCapacity: true) }
            return state.lines
        }
    }

    /// Runs `body` over the lines from `start` on, under the lock (no copy).
    func withLines<T>(from start: Int, _ body: (ArraySlice<Line>) -> T) -> T {
        state.withLock { body($0.lines[min(start, $0.lines.count)...]) }
    }

    /// The reading loop: until EOF or an error.
    func read(from descriptor: Int32) {
        let capacity = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        var carried: [UInt8] = []  // a line's start from the previous read
        var parsed: [Line] = []
        while true {
            #if canImport(Glibc)
            let count = Glibc.read(descriptor, buffer.baseAddress, capacity)
            #else
            let count = Darwin.read(descriptor, buffer.baseAddress, capacity)
            #endif
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            let time = MonotonicTime.now()
            parsed.removeAll(keepingCapacity: true)
            var unparsed = 0
            var firstUnparsed: String?
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            var lineStart = 0
            var index = 0
            while index < count {
                if bytes[index] == UInt8(ascii: "\n") {
                    let line: Line?
                    if carried.isEmpty {
                        line = Self.parse(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index]), time: time)
                    } else {
                        carried.append(contentsOf: bytes[lineStart..<index])
                        line = carried.withUnsafeBytes { Self.parse($0, time: time) }
                        if line == nil, firstUnparsed == nil { firstUnparsed = String(decoding: carried.prefix(200), as: UTF8.self) }
                        carried.removeAll(keepingCapacity: true)
                    }
                    if let line {
                        parsed.append(line)
                    } else {
                        unparsed += 1
                        if firstUnparsed == nil {
                            firstUnparsed = String(decoding: bytes[lineStart..<min(index, lineStart + 200)], as: UTF8.self)
                        }
                    }
                    lineStart = index + 1
                }
                index += 1
            }
            if lineStart < count { carried.append(contentsOf: bytes[lineStart..<count]) }
            state.withLock { state in
                state.lines.append(contentsOf: parsed)
                state.unparsed += unparsed
                state.bytes += count
                if state.firstUnparsed == nil { state.firstUnparsed = firstUnparsed }
            }
        }
        state.withLock { $0.closed = true }
    }

    private static let activityKey = Array(#""activityId":""#.utf8)
    private static let kindKey = Array(#""kind":""#.utf8)
    private static let valueKey = Array(#""value":""#.utf8)
    private static let eventKey = Array(#""event":""#.utf8)
    private static let priorityKey = Array(#""priority":"#.utf8)

    /// One NDJSON delivery line; nil when it is not one.
    static func parse(_ line: UnsafeRawBufferPointer, time: Int64) -> Line? {
        guard line.count > 40, line[0] == UInt8(ascii: "{") else { return nil }
        guard let activityStart = find(activityKey, in: line, from: 0),
              let activityEnd = find([UInt8(ascii: "\"")], in: line, from: activityStart),
              let kindStart = find(kindKey, in: line, from: activityEnd),
              let valueStart = find(valueKey, in: line, from: kindStart),
              let eventStart = findLast(eventKey, in: line)
        else { return nil }
        var device: Int32 = -1
        if valueStart + 8 <= line.count {
            var value: UInt32 = 0
            var ok = true
            for offset in 0..<8 {
                let byte = line[valueStart + offset]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                default: ok = false; digit = 0
                }
                value = value << 4 | UInt32(digit)
            }
            if ok, value <= UInt32(Int32.max) { device = Int32(value) }
        }
        var priority: UInt8 = 0
        if var index = find(priorityKey, in: line, from: valueStart) {
            while index < line.count, line[index] >= UInt8(ascii: "0"), line[index] <= UInt8(ascii: "9"), priority < 100 {
                priority = priority &* 10 &+ (line[index] - UInt8(ascii: "0"))
                index += 1
            }
        }
        let event: Event
        switch line[eventStart] {
        case UInt8(ascii: "s"): event = .start
        case UInt8(ascii: "u"): event = .update
        case UInt8(ascii: "e"): event = .end
        default: event = .other
        }
        let activityId = event == .start
            ? String(decoding: UnsafeRawBufferPointer(rebasing: line[activityStart..<(activityEnd - 1)]), as: UTF8.self)
            : nil
        return Line(time: time, event: event, device: device, priority: priority, activityId: activityId)
    }

    /// The index just past the first occurrence of `needle` at or after `from`.
    private static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = from
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first {
                var matched = true
                for offset in 1..<max(needle.count, 1) where haystack[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return index + needle.count }
            }
            index += 1
        }
        return nil
    }

    /// The index just past the last occurrence of `needle`.
    private static func findLast(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.count - needle.count
        while index >= 0 {
            var matched = true
            for offset in 0..<needle.count where haystack[index + offset] != needle[offset] {
                matched = false
                break
            }
            if matched { return index + needle.count }
            index -= 1
        }
        return nil
    }
}
