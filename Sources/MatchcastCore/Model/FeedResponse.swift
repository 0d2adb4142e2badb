import Foundation

/// A match in a feed response that failed to decode, kept so one bad match never drops the others.
public struct MatchDecodeFailure: Sendable, Hashable, Error, CustomStringConvertible {
    /// The match id, when at least that much could be read.
    public var matchId: String?
    public var error: InputError

    public var description: String {
        "match \(matchId ?? "?"): \(error)"
    }
}

/// A list element that decodes to a snapshot or to the reason it could not.
struct LenientSnapshot: Decodable {
    let result: Result<MatchSnapshot, MatchDecodeFailure>

    private enum IDKey: String, CodingKey { case id }

    init(from decoder: any Decoder) throws {
        do {
            result = .success(try MatchSnapshot(from: decoder))
        } catch {
            let id = try? decoder.container(keyedBy: IDKey.self).decode(String.self, forKey: .id)
            result = .failure(MatchDecodeFailure(matchId: id, error: InputError(error)))
        }
    }
}

/// `GET {base}/live-matches`: `{"retryAfterMs", "generatedAt", "matches": [...]}`.
public struct LiveMatchesResponse: Sendable {
    public var retryAfterMs: Int?
    public var generatedAt: Date?
    public var matches: [MatchSnapshot]
    /// Matches that could not be decoded; the rest are still usable.
    public var failures: [MatchDecodeFailure]

    public init(retryAfterMs: Int?, generatedAt: Date? = nil, matches: [MatchSnapshot], failures: [MatchDecodeFailure] = []) {
        self.retryAfterMs = retryAfterMs
        self.generatedAt = generatedAt
        self.matches = matches
        self.failures = failures
    }
}

/// `GET {base}/matches/{id}`: `{"retryAfterMs", "match": {...}}`.
public struct MatchResponse: Sendable {
    public var retryAfterMs: Int?
    public var match: MatchSnapshot

    public init(retryAfterMs: Int?, match: MatchSnapshot) {
        self.retryAfterMs = retryAfterMs
        self.match = match
    }
}

/// `GET {base}/schedule?date=...`: `{"date", "matches": [...]}`.
public struct ScheduleResponse: Sendable {
    public var date: String
    public var matches: [MatchSnapshot]
    public var failures: [MatchDecodeFailure]

    public init(date: String, matches: [MatchSnapshot], failures: [MatchDecodeFailure] = []) {
        self.date = date
        self.matches = matches
        self.failures = failures
    }
}

/// Decoding of the three feed resources; the whole body is rejected only when its envelope is wrong.
public enum FeedDecoding {
    private struct ListBody: Decodable {
        var retryAfterMs: Int?
        var generatedAt: Date?
        var date: String?
        var matches: [LenientSnapshot]
    }

    private struct MatchBody: Decodable {
        var retryAfterMs: Int?
        var match: MatchSnapshot
    }

    /// Read without `Codable` when the body is plain (`FeedBodyReading`), else decoded by Foundation, which names
    /// any error: the same response either way.
    public static func liveMatches(_ data: Data) throws(InputError) -> LiveMatchesResponse {
        if let read = FeedBodyReading.liveMatches(data) { return read }
        return try decodedLiveMatches(data)
    }

    /// As `liveMatches`: read without `Codable` when plain, else by Foundation.
    public static func match(_ data: Data) throws(InputError) -> MatchResponse {
        if let read = FeedBodyReading.match(data) { return read }
        return try decodedMatch(data)
    }

    /// `match` by Foundation's decoder alone (tests hold `FeedBodyReading` to it).
    static func decodedMatch(_ data: Data) throws(InputError) -> MatchResponse {
        let body = try JSON.decode(MatchBody.self, from: data)
        return MatchResponse(retryAfterMs: body.retryAfterMs, match: body.match)
    }

    /// `liveMatches` by Foundation's decoder alone.
    static func decodedLiveMatches(_ data: Data) throws(InputError) -> LiveMatchesResponse {
        let body = try JSON.decode(ListBody.self, from: data)
        let (ok, bad) = split(body.matches)
        return LiveMatchesResponse(retryAfterMs: body.retryAfterMs, generatedAt: body.generatedAt, matches: ok, failures: bad)
    }

    public static func schedule(_ data: Data) throws(InputError) -> ScheduleResponse {
        let body = try JSON.decode(ListBody.self, from: data)
        let (ok, bad) = split(body.matches)
        return ScheduleResponse(date: body.date ?? "", matches: ok, failures: bad)
    }

    /// Any of: a bare MatchSnapshot, `{"match": ...}` or `{"matches": [...]}` (what `render` accepts).
    public static func anySnapshots(_ data: Data) throws(InputError) -> (matches: [MatchSnapshot], failures: [MatchDecodeFailure]) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw InputError(field: "", reason: "not valid JSON")
        }
        guard let dict = object as? [String: Any] else {
            throw InputError(field: "", reason: "expected a JSON object")
        }
        if dict["matches"] != nil {
            let list = try liveMatches(data)
            return (list.matches, list.failures)
        }
        if dict["match"] != nil {
            return ([try match(data).match], [])
        }
        return ([try JSON.decode(MatchSnapshot.self, from: data)], [])
    }

    private static func split(_ items: [LenientSnapshot]) -> ([MatchSnapshot], [MatchDecodeFailure]) {
        var ok: [MatchSnapshot] = []
        var bad: [MatchDecodeFailure] = []
        // The decoder's coding paths are absolute, so each failure already names `matches[i]`.
        for item in items {
            switch item.result {
            case .success(let snapshot): ok.append(snapshot)
            case .failure(let failure): bad.append(failure)
            }
        }
        return (ok, bad)
    }
}
