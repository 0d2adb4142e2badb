import Foundation
import MatchcastCore

/// Turns an importer's snapshots into `/matches/{id}` 200 lines as a real backend would serve them:
/// `seq` growing by one from 1, `updatedAt` set, an `etag` of `"v<seq>"`, and the body
/// `{"retryAfterMs": N, "match": MatchSnapshot}` encoded with the deterministic `JSON.encoder()`.
struct MatchTimeline {
    /// What a backend asks clients to wait, in milliseconds.
    enum Pace {
        /// Before the start.
        static let scheduled = 60_000
        /// While the ball is in play.
        static let live = 5_000
        /// Innings breaks, changeovers, rain.
        static let pause = 30_000
        /// After the end: nothing more will change.
        static let final = 60_000
    }

    let request: String
    /// Wall-clock time at `t = 0`.
    let origin: Date
    private(set) var lines: [RecordingLine] = []
    private(set) var t: Double = 0

    init(matchId: String, origin: Date) {
        request = FeedRequest.match(matchId).path
        self.origin = origin
    }

    /// Appends `snapshot` at `t` seconds (never earlier than the line before), updated at `updatedAt`
    /// or, without one, at `origin + t`.
    mutating func append(
        _ snapshot: MatchSnapshot, at t: Double, retryAfterMs: Int, updatedAt: Date? = nil
    ) throws(InputError) {
        let seq = lines.count + 1
        var snapshot = snapshot
        snapshot.seq = seq
        let time = max(self.t, (t * 1000).rounded() / 1000)
        snapshot.updatedAt = updatedAt ?? origin.addingTimeInterval(time)
        let body: Data
        do {
            body = try JSON.encoder().encode(NativeFeedBody.Match(retryAfterMs: retryAfterMs, match: snapshot))
        } catch {
            throw InputError(field: "", reason: "snapshot \(seq) could not be encoded: \(error)")
        }
        lines.append(RecordingLine(t: time, request: request, status: 200, headers: ["etag": "\"v\(seq)\""], body: body))
        self.t = time
    }

    /// Appends `snapshot` `seconds` after the previous line.
    mutating func append(
        _ snapshot: MatchSnapshot, after seconds: Double, retryAfterMs: Int
    ) throws(InputError) {
        try append(snapshot, at: t + seconds, retryAfterMs: retryAfterMs)
    }
}

/// Team ids and short names for sources that give only a name.
enum TeamNaming {
    /// `Mumbai Indians` → `mumbai-indians`.
    static func slug(_ name: String) -> String {
        var out = ""
        var pendingDash = false
        for scalar in name.lowercased().unicodeScalars {
            if CharacterSet.alphanumerics.contains(scalar), scalar.isASCII {
                if pendingDash, !out.isEmpty { out.append("-") }
                out.unicodeScalars.append(scalar)
                pendingDash = false
            } else {
                pendingDash = true
            }
        }
        return out.isEmpty ? "team" : out
    }

    /// A 3-letter style code: the initials of a multi-word name ("New Zealand" → "NZ",
    /// "Royal Challengers Bangalore" → "RCB"), else the first three letters ("England" → "ENG").
    static func short(_ name: String) -> String {
        let words = name.split(whereSeparator: { $0.isWhitespace }).map { $0.filter(\.isLetter) }.filter { !$0.isEmpty }
        if words.count >= 2 { return String(words.compactMap(\.first)).uppercased() }
        return String((words.first ?? name).prefix(3)).uppercased()
    }

    /// The team for `name`.
    static func team(_ name: String) -> Team {
        Team(id: slug(name), name: name, short: short(name))
    }
}
