import Foundation
import MatchcastCore
import Testing

@Suite("Tennis point-by-point conformance")
struct TennisConformanceTests {
    /// The real-data sample, read from `$MATCHCAST_REALDATA` and never copied into
    /// the project; nil when the variable is unset or the file is missing, which
    /// disables the conformance test (it shows as skipped, not passed).
    static let atpSampleURL: URL? = {
        guard let root = ProcessInfo.processInfo.environment["MATCHCAST_REALDATA"] else { return nil }
        let url = URL(fileURLWithPath: root).appendingPathComponent("tennis/pbp_matches_atp_sample.csv")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    /// Splits CSV text into rows of fields (RFC 4180: quoted fields may hold
    /// commas, newlines and doubled quotes; CRLF or LF line ends).
    private static func parseCSV(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = ""
        var quoted = false
        var iterator = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        while let scalar = pending ?? iterator.next() {
            pending = nil
            if quoted {
                if scalar == "\"" {
                    let next = iterator.next()
                    if next == "\"" { field.unicodeScalars.append("\"") } else { quoted = false; pending = next }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"": quoted = true
            case ",": row.append(field); field = ""
            case "\r": break
            case "\n": row.append(field); rows.append(row); row = []; field = ""
            default: field.unicodeScalars.append(scalar)
            }
        }
        if !field.isEmpty || !row.isEmpty {
            row.append(field)
            rows.append(row)
        }
        return rows
    }

    /// Scores a Sackmann record. The CSV states neither best-of nor the final-set
    /// rule: best of 5 exactly when someone takes three sets, and the deciding-set
    /// rule from what its last set shows.
    private static func derive(pbp: String) throws(TennisError) -> TennisState {
        let converted = try TennisPointByPoint.convert(pbp: pbp)
        let finalSetTiebreak = converted.finalSetTiebreak ?? 7
        let asFive = try TennisEngine.derive(
            points: converted.points,
            rules: TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: finalSetTiebreak))
        if asFive.setsWon.contains(3) { return asFive }
        return try TennisEngine.derive(
            points: converted.points,
            rules: TennisRules(bestOf: 3, firstServer: .home, finalSetTiebreak: finalSetTiebreak))
    }

    /// Formats completed sets as the `score` column does: from the match winner's
    /// side, with the tiebreak loser's points in brackets ("7-6(4) 4-6 6-3").
    private static func sackmannScore(_ state: TennisState) -> String {
        let winner = state.winner ?? .home
        return zip(state.sets, state.tiebreakScores).map { set, tiebreak in
            let (mine, theirs) = winner == .home ? (set[0], set[1]) : (set[1], set[0])
            guard let tiebreak else { return "\(mine)-\(theirs)" }
            return "\(mine)-\(theirs)(\(tiebreak.min()!))"
        }.joined(separator: " ")
    }

    @Test func csvSplitterHandlesQuotes() {
        let rows = Self.parseCSV("a,\"b,c\",\"d\"\"e\"\r\nf,,\"g\nh\"\n")
        #expect(rows == [["a", "b,c", "d\"e"], ["f", "", "g\nh"]])
    }

    @Test func convertsServerRelativePoints() throws {
        // Home serves game 1 (S, A, R, D), away serves game 2.
        let result = try TennisPointByPoint.convert(pbp: "SARD;SSSS")
        #expect(result.points == "HHAAAAAA")
        #expect(result.finalSetTiebreak == nil)
        #expect(try TennisPointByPoint.convert(pbp: "SSSS", server1Is: .away).points == "AAAA")
    }

    @Test func tiebreakMarkersSwitchServerAndSetOrder() throws {
        // Twelve holds, then a tiebreak home opens: S (home), RR (away serving, home wins both)...
        let holds = Array(repeating: "SSSS", count: 12).joined(separator: ";")
        let result = try TennisPointByPoint.convert(pbp: holds + ";S/RR/SS/RR/S.S")
        let twelve = (0..<12).map { $0 % 2 == 0 ? "HHHH" : "AAAA" }.joined()
        // Away received the tiebreak's first point, so away serves set two's first.
        #expect(result.points == twelve + "H" + "HH" + "HH" + "HH" + "H" + "A")
        #expect(result.finalSetTiebreak == nil)
    }

    @Test func infersFinalSetRule() throws {
        let holds = Array(repeating: "SSSS", count: 12).joined(separator: ";")
        let seven = try TennisPointByPoint.convert(pbp: holds + ";S/RR/SS/RR")
        #expect(seven.finalSetTiebreak == 7)
        // Home led 7-5, which ends a 7-point tiebreak, yet play went on to 10-6.
        let ten = try TennisPointByPoint.convert(pbp: holds + ";R/SS/RR/RR/SS/RR/SR/RR/S")
        #expect(ten.finalSetTiebreak == 10)
        let advantage = try TennisPointByPoint.convert(pbp: holds + ";SSSS;RRRR")
        #expect(advantage.finalSetTiebreak == 0)
    }

    @Test func rejectsUnknownCharacter() {
        #expect(throws: TennisError.invalidCharacter("X", at: 5)) {
            try TennisPointByPoint.convert(pbp: "SSSS;X")
        }
    }

    @Test(
        "every ATP sample match scores as its score column says",
        .enabled(if: Self.atpSampleURL != nil, "set MATCHCAST_REALDATA to the real-data directory")
    )
    func atpSample() throws {
        let url = try #require(Self.atpSampleURL)
        let table = Self.parseCSV(try String(contentsOf: url, encoding: .utf8))
        let header = try #require(table.first)
        func column(_ name: String) throws -> Int { try #require(header.firstIndex(of: name)) }
        let (idColumn, winnerColumn, pbpColumn, scoreColumn) =
            (try column("pbp_id"), try column("winner"), try column("pbp"), try column("score"))

        var checked = 0
        for (number, row) in table.dropFirst().enumerated() where row != [""] {
            guard row.count == header.count else {
                Issue.record("row \(number + 1): \(row.count) fields, header has \(header.count)")
                continue
            }
            let label = "row \(number + 1) (pbp_id \(row[idColumn]))"
            let state: TennisState
            do {
                state = try Self.derive(pbp: row[pbpColumn])
            } catch {
                Issue.record("\(label): \(error)")
                continue
            }
            #expect(Self.sackmannScore(state) == row[scoreColumn], "\(label): score")
            let expectedWinner: Side? = row[winnerColumn] == "1" ? .home : row[winnerColumn] == "2" ? .away : nil
            #expect(state.winner == expectedWinner, "\(label): winner")
            checked += 1
        }
        #expect(checked == 150)
    }

    @Test(
        "the engine's server matches who served every ATP sample point",
        .enabled(if: Self.atpSampleURL != nil, "set MATCHCAST_REALDATA to the real-data directory")
    )
    func atpSampleServers() throws {
        let url = try #require(Self.atpSampleURL)
        let table = Self.parseCSV(try String(contentsOf: url, encoding: .utf8))
        let pbpColumn = try #require(table.first?.firstIndex(of: "pbp"))
        for (number, row) in table.dropFirst().enumerated() where row.indices.contains(pbpColumn) {
            let pbp = row[pbpColumn]
            let points = try TennisPointByPoint.convert(pbp: pbp).points
            // The record says whether the server won each point and the
            // conversion says who won it; together they name the server.
            let serverWon = pbp.filter { "SARD".contains($0) }.map { $0 == "S" || $0 == "A" }
            let winners: [Side] = points.map { $0 == "H" ? .home : .away }
            let rules = TennisRules(bestOf: 5, firstServer: .home, finalSetTiebreak: 7)
            for index in winners.indices {
                let served = serverWon[index] ? winners[index] : winners[index].opponent
                let state = try TennisEngine.derive(points: Array(winners[..<index]), rules: rules)
                guard state.server == served else {
                    Issue.record("row \(number + 1): point \(index) served by \(served), engine says \(state.server)")
                    break
                }
            }
        }
    }
}
