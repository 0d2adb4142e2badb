import Foundation
import Testing
@testable import MatchcastFeeds

@Suite struct ImportScratch {
    @Test func dump() throws {
        let root = URL(fileURLWithPath: "/work/shared/realdata")
        let lines = try CricsheetImporter.recording(contentsOf: root.appendingPathComponent("cricsheet/1144530.json"))
        let data = try RecordingWriter.encode(lines)
        try data.write(to: URL(fileURLWithPath: "/tmp/mc_1144530.ndjson"))
        let csv = try Data(contentsOf: root.appendingPathComponent("tennis/pbp_matches_atp_sample.csv"))
        try RecordingWriter.encode(try TennisPBPImporter.recording(csv: csv, pbpId: "10439126")).write(to: URL(fileURLWithPath: "/tmp/mc_tennis.ndjson"))
        try RecordingWriter.encode(try MLBImporter.recording(Data(contentsOf: root.appendingPathComponent("mlb/livefeed_744914.json")))).write(to: URL(fileURLWithPath: "/tmp/mc_mlb.ndjson"))
    }
}
