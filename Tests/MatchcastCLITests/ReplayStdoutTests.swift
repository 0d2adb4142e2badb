#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MatchcastTesting
import Testing

/// `matchcast replay` to stdout, run as a user runs it: the whole fan-out arrives on the pipe, one JSON object a line.
@Suite("matchcast replay to stdout")
struct ReplayStdoutTests {
    @Test("a recorded match to 50 followers prints every delivery as a line of JSON, far more than a pipe holds",
          .timeLimit(.minutes(1)))
    func manyDeliveries() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let followers = 50
        let result = try await MatchcastProcess.run(
            binary, ["replay", ReplayAPNsTests.goldenRecording.path, "--fast", "--followers", String(followers)])
        #expect(result.status == 0, "replay failed: \(result.stderr)")
        // More than a Linux pipe's 64 KB: a caller that reads the output only after the exit must not hang.
        #expect(result.stdout.utf8.count > 65_536)

        let lines = result.stdout.split(separator: "\n")
        let deliveries = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
        }
        // Every follower's activity is started and ended once.
        let kinds = deliveries.compactMap { ($0["payload"] as? [String: Any])?["aps"] as? [String: Any] }
            .compactMap { $0["event"] as? String }
        #expect(kinds.filter { $0 == "start" }.count == followers)
        #expect(kinds.filter { $0 == "end" }.count == followers)
    }

    @Test("a replay whose output cannot be written (a full disk) fails with exit code 1, naming why",
          .enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"), .timeLimit(.minutes(1)))
    func fullDisk() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        // Through a shell, so that the replay's standard output is /dev/full, where every write fails with ENOSPC.
        let result = try await MatchcastProcess.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", #"exec "$0" replay "$1" --fast --followers 3 > /dev/full"#, binary.path, ReplayAPNsTests.goldenRecording.path])
        #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("matchcast replay: write failed: \(String(cString: strerror(ENOSPC)))"), "\(result.stderr)")
    }
}
