import ArgumentParser
import Foundation
import MatchcastCore

/// `matchcast render [FILE]`: what a device would show for a snapshot (docs/formats.md, "Content-state").
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Print the content-state a device would show for a match snapshot.",
        discussion: """
            Reads one MatchSnapshot, or a feed response holding "match" or "matches", from FILE or \
            standard input, and prints one JSON line per match: \
            {"matchId", "contentState", "derived"}. Malformed input exits 1 with a one-line error naming the field.

            Example:
              curl -s localhost:8090/matches/tennis-bo3 | matchcast render
            """
    )

    @Argument(help: "A JSON file; standard input when omitted or '-'.")
    var file: String?

    func run() async throws {
        let data: Data
        do {
            if let file, file != "-" {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } else {
                data = FileHandle.standardInput.readDataToEndOfFile()
            }
        } catch {
            throw CommandFailure("cannot read \(file ?? "stdin"): \(error.localizedDescription)")
        }
        let lines: [String]
        do {
            lines = try Self.render(data)
        } catch {
            StandardStreams.err("matchcast render: \(error)")
            throw ExitCode(1)
        }
        for line in lines { StandardStreams.out(line) }
    }

    private struct Line: Encodable {
        let matchId: String
        let contentState: ContentState
        let derived: Derived
    }

    /// The output lines for an input; throws the first per-match failure after rendering none.
    static func render(_ data: Data) throws -> [String] {
        let (matches, failures) = try FeedDecoding.anySnapshots(data)
        if let failure = failures.first { throw failure.error }
        let encoder = JSON.encoder()
        return try matches.map { snapshot in
            let rendered = try MatchRenderer.render(snapshot)
            let line = Line(matchId: snapshot.id, contentState: rendered.contentState, derived: rendered.derived)
            return String(decoding: try encoder.encode(line), as: UTF8.self)
        }
    }
}
