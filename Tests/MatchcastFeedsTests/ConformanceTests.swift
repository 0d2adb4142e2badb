import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// Every real-data file under `$MATCHCAST_REALDATA` (read in place, never copied), imported and
/// checked against what the file itself says. Skipped, visibly, when the variable is unset.
@Suite("Real-data conformance")
struct ConformanceTests {
    static let root: URL? = {
        guard let path = ProcessInfo.processInfo.environment["MATCHCAST_REALDATA"], !path.isEmpty else { return nil }
        let url = URL(fileURLWithPath: path, isDirectory: true)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    static var hasData: Bool { root != nil }

    /// Files under `folder` ending in `.ext`, sorted by name.
    static func files(_ folder: String, _ ext: String) -> [URL] {
        guard let root else { return [] }
        let dir = root.appendingPathComponent(folder, isDirectory: true)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix("." + ext) }.sorted().map { dir.appendingPathComponent($0) }
    }

    /// Data files no importer reads, and why; anything else found under the root must be checked.
    static let notImported: [String: String] = [:]

    @Test("every data file under MATCHCAST_REALDATA is checked", .enabled(if: hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func everyFileIsCovered() throws {
        let root = try #require(Self.root)
        let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
        var unchecked: [String] = []
        var checked = 0
        while let path = enumerator.nextObject() as? String {
            guard path.hasSuffix(".json") || path.hasSuffix(".csv") else { continue }
            let covered = (path.hasPrefix("cricsheet/") && path.hasSuffix(".json") && !path.dropFirst(10).contains("/"))
                || (path.hasPrefix("tennis/") && path.hasSuffix(".csv") && !path.dropFirst(7).contains("/"))
                || (path.hasPrefix("mlb/") && path.hasSuffix(".json") && !path.dropFirst(4).contains("/"))
                || (path.hasPrefix("espn/") && path.hasSuffix(".json") && !path.dropFirst(5).contains("/"))
                || (path.hasPrefix("football/") && path.hasSuffix(".json") && !path.dropFirst(9).contains("/"))
                || NHLConformanceTests.covers(path)
            if covered { checked += 1 } else if Self.notImported[path] == nil { unchecked.append(path) }
        }
        #expect(unchecked == [], "data files no conformance test reads")
        #expect(checked == Self.files("cricsheet", "json").count + Self.files("tennis", "csv").count + Self.files("mlb", "json").count
            + Self.files("espn", "json").count + Self.files("football", "json").count + NHLConformanceTests.files.count)
        #expect(checked > 0)
    }

    // MARK: Cricket

    @Test("every Cricsheet match imports and ends as its file says", .enabled(if: hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func cricsheet() throws {
        let files = Self.files("cricsheet", "json")
        #expect(!files.isEmpty)
        var table = ["file      | innings expected (runs/wkts overs)              | innings imported                                | result expected / imported"]
        var failures = 0
        for url in files {
            let name = url.deletingPathExtension().lastPathComponent
            let data = try Data(contentsOf: url)
            let facts = try CricsheetFacts(data)
            var problems: [String] = []
            var got: [String] = []
            var result = "-"
            do {
                let lines = try CricsheetImporter.recording(data, id: name)
                problems += ImportCheck.invariants(lines, id: name)
                let last = try #require(try ImportCheck.responses(lines).last).match
                let rendered = try MatchRenderer.render(last)
                guard case .cricket(let derived) = rendered.derived else { throw InputError(field: "score", reason: "not cricket") }
                let ids = [last.home.name: last.home.id, last.away.name: last.away.id]
                let expected = facts.innings.map { "\(ids[$0.team] ?? $0.team) \($0.runs)/\($0.wickets) \($0.overs)" }
                got = derived.innings.map { "\($0.team) \($0.runs)/\($0.wickets) \($0.overs)" }
                if got != expected { problems.append("innings") }
                let shorts = [last.home.name: last.home.short, last.away.name: last.away.short]
                let expectedResult = facts.resultLine { shorts[$0] ?? $0 }
                result = "\(expectedResult) / \(derived.result ?? "nil")"
                if derived.result != expectedResult { problems.append("result") }
                if last.status != (facts.noResult ? .abandoned : .completed) { problems.append("status \(last.status)") }
            } catch {
                problems.append("\(error)")
            }
            let expected = facts.innings.map { "\($0.runs)/\($0.wickets) \($0.overs)" }.joined(separator: ", ")
            table.append(
                "\(name.padding(toLength: 9, withPad: " ", startingAt: 0)) | \(expected.padding(toLength: 47, withPad: " ", startingAt: 0)) | "
                    + "\(got.map { String($0.split(separator: " ").dropFirst().joined(separator: " ")) }.joined(separator: ", ").padding(toLength: 47, withPad: " ", startingAt: 0)) | "
                    + "\(result)\(problems.isEmpty ? "" : "  FAIL: \(problems.joined(separator: "; "))")")
            failures += problems.isEmpty ? 0 : 1
        }
        print(table.joined(separator: "\n"))
        #expect(failures == 0, "\(failures) Cricsheet files differ:\n\(table.joined(separator: "\n"))")
    }

    // MARK: Tennis

    @Test("all ATP point-by-point rows import and end on their score column", .enabled(if: hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func tennis() throws {
        let files = Self.files("tennis", "csv")
        #expect(!files.isEmpty)
        for url in files {
            let rows = try TennisPBPImporter.rows(csv: Data(contentsOf: url))
            var failures: [String] = []
            for row in rows {
                do {
                    let lines = try TennisPBPImporter.recording(row)
                    let problems = ImportCheck.invariants(lines, id: "pbp-\(row.pbpId)")
                    let last = try #require(try ImportCheck.responses(lines).last).match
                    let rendered = try MatchRenderer.render(last)
                    guard case .tennis(let derived) = rendered.derived, let state = rendered.tennis else {
                        throw InputError(field: "score", reason: "not tennis")
                    }
                    let winner: Side? = row.winner == 1 ? .home : row.winner == 2 ? .away : nil
                    // `derived.sets` has no tiebreak points; the column's brackets are dropped to compare them.
                    let plain = Self.sackmann(derived.sets, tiebreaks: nil, winner: derived.winner)
                    let full = Self.sackmann(state.sets, tiebreaks: state.tiebreakScores, winner: state.winner)
                    let column = row.score.replacingOccurrences(of: #"\(\d+\)"#, with: "", options: .regularExpression)
                    if !problems.isEmpty || plain != column || full != row.score || derived.winner != winner {
                        failures.append("\(row.pbpId): score '\(row.score)' derived '\(full)' winner \(String(describing: derived.winner)) \(problems)")
                    }
                } catch {
                    failures.append("\(row.pbpId): \(error)")
                }
            }
            #expect(!rows.isEmpty, "\(url.lastPathComponent) has no rows")
            #expect(failures.isEmpty, "\(url.lastPathComponent): \(failures.count) of \(rows.count) rows differ:\n\(failures.joined(separator: "\n"))")
        }
    }

    /// Sets from the winner's side, as the `score` column writes them: "7-6(4) 4-6 6-3".
    static func sackmann(_ sets: [[Int]], tiebreaks: [[Int]?]?, winner: Side?) -> String {
        sets.enumerated().map { index, set in
            let (mine, theirs) = winner == .away ? (set[1], set[0]) : (set[0], set[1])
            guard let tiebreaks, index < tiebreaks.count, let points = tiebreaks[index], let lost = points.min() else {
                return "\(mine)-\(theirs)"
            }
            return "\(mine)-\(theirs)(\(lost))"
        }.joined(separator: " ")
    }

    // MARK: MLB

    @Test("the MLB live feed imports play by play and ends on its linescore", .enabled(if: hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func mlb() throws {
        let files = Self.files("mlb", "json")
        #expect(!files.isEmpty)
        for url in files {
            let data = try Data(contentsOf: url)
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let liveData = try #require(json["liveData"] as? [String: Any])
            let linescore = try #require(liveData["linescore"] as? [String: Any])
            let teams = try #require(linescore["teams"] as? [String: [String: Any]])
            let (home, away) = (try #require(teams["home"]?["runs"] as? Int), try #require(teams["away"]?["runs"] as? Int))
            let plays = try #require((liveData["plays"] as? [String: Any])?["allPlays"] as? [[String: Any]])

            let lines = try MLBImporter.recording(data)
            let id = try #require(try ImportCheck.responses(lines).first?.match.id)
            #expect(ImportCheck.invariants(lines, id: id) == [], "\(url.lastPathComponent)")
            #expect(lines.count == plays.count + 2)
            let responses = try ImportCheck.responses(lines)
            for (play, response) in zip(plays, responses.dropFirst()) {
                let result = play["result"] as? [String: Any]
                guard case .baseball(let score) = response.match.score else { Issue.record("not baseball"); continue }
                #expect(score.home == result?["homeScore"] as? Int && score.away == result?["awayScore"] as? Int)
            }
            let last = try #require(responses.last).match
            #expect(last.status == .completed)
            guard case .totals(let derived) = try MatchRenderer.render(last).derived else {
                Issue.record("not baseball")
                continue
            }
            #expect(derived.home == home && derived.away == away, "\(url.lastPathComponent): linescore \(away) @ \(home)")
        }
    }
}
