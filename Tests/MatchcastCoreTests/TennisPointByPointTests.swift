import Foundation
import MatchcastCore
import Testing

/// `TennisPointByPoint`: Sackmann's server-relative point records turned into who won each point. The real
/// data (every row of every `tennis/*.csv` under `$MATCHCAST_REALDATA`) is checked in
/// `MatchcastFeedsTests/TennisConformanceTests`.
@Suite("Tennis point-by-point records")
struct TennisPointByPointTests {
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
}
