import ArgumentParser
import Foundation
import MatchcastCore
import MatchcastFeeds

/// `matchcast import`: real match data turned into recordings, as a live feed would have produced them.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Turn real match data into a recording for replay.",
        discussion: """
            Each importer writes one /matches/{id} observation per ball, point or play, with the \
            retryAfterMs a real backend would ask for (shorter while live, longer in breaks).

            Examples:
              matchcast import cricsheet $MATCHCAST_REALDATA/cricsheet/1144530.json -o final.ndjson
              matchcast import tennis-pbp $MATCHCAST_REALDATA/tennis/pbp_matches_atp_sample.csv --id 10434613 -o t.ndjson
              matchcast import mlb $MATCHCAST_REALDATA/mlb/livefeed_744914.json -o mlb.ndjson
            """,
        subcommands: [Cricsheet.self, TennisPBP.self, MLB.self]
    )

    /// Options every importer takes.
    struct Output: ParsableArguments {
        @Option(name: [.short, .customLong("output")], help: "The recording to write.")
        var output: String

        func write(_ lines: [RecordingLine]) throws {
            let data: Data
            do {
                data = try RecordingWriter.encode(lines)
                try data.write(to: URL(fileURLWithPath: output))
            } catch {
                throw ValidationError("cannot write \(output): \(error)")
            }
            StandardStreams.err("wrote \(lines.count) observations to \(output)")
        }
    }

    static func read(_ path: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("cannot read \(path): \(error.localizedDescription)")
        }
    }

    static func failing(_ path: String, _ error: InputError) -> ValidationError {
        ValidationError("\(path): \(error)")
    }

    struct Cricsheet: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A Cricsheet JSON match: one snapshot per ball.",
            discussion: "Example: matchcast import cricsheet 1144530.json -o final.ndjson")

        @Argument(help: "A Cricsheet JSON file (format 1.0 or 1.1).") var file: String
        @Option(help: "Match id (default: the file name).") var id: String?
        @OptionGroup var output: Output

        func run() throws {
            let url = URL(fileURLWithPath: file)
            let lines: [RecordingLine]
            do {
                lines = try CricsheetImporter.recording(ImportCommand.read(file), id: id ?? CricsheetImporter.matchId(forFile: url))
            } catch let error as InputError {
                throw ImportCommand.failing(file, error)
            }
            try output.write(lines)
        }
    }

    struct TennisPBP: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tennis-pbp",
            abstract: "A row of a point-by-point CSV (Sackmann's encoding): one snapshot per point.",
            discussion: "Example: matchcast import tennis-pbp pbp_matches_atp_sample.csv --id 10434613 -o t.ndjson")

        @Argument(help: "The CSV file.") var file: String
        @Option(help: "The row's pbp_id.") var id: String
        @Option(help: "Match id in the recording (default: the pbp_id).") var matchId: String?
        @OptionGroup var output: Output

        func run() throws {
            let lines: [RecordingLine]
            do {
                lines = try TennisPBPImporter.recording(csv: ImportCommand.read(file), pbpId: id, id: matchId)
            } catch let error as InputError {
                throw ImportCommand.failing(file, error)
            }
            try output.write(lines)
        }
    }

    struct MLB: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An MLB Stats API live feed: one snapshot per play, timed by the plays.",
            discussion: "Example: matchcast import mlb livefeed_744914.json -o mlb.ndjson")

        @Argument(help: "The live feed JSON.") var file: String
        @Option(help: "Match id (default: mlb:<gamePk>, the id the mlb feed serves it under).") var id: String?
        @OptionGroup var output: Output

        func run() throws {
            let lines: [RecordingLine]
            do {
                lines = try MLBImporter.recording(ImportCommand.read(file), id: id)
            } catch let error as InputError {
                throw ImportCommand.failing(file, error)
            }
            try output.write(lines)
        }
    }
}
