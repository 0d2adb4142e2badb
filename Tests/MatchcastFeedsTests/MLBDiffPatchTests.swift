import Foundation
import MatchcastCore
import Synchronization
import Testing

@testable import MatchcastFeeds

/// `MLBFeedTransport(diffPatch: true)`: the whole feed once, then diffs applied to it.
@Suite("MLB live feed by diff patches")
struct MLBDiffPatchTests {
    static let stamp = "20250412_230512"
    static let diffPath = "/api/v1.1/game/123456/feed/live/diffPatch?startTimecode=\(stamp)"

    /// The whole feed from `MLBLiveFeedTests.liveGame`, and each diff answer in turn from `diffs`.
    static func upstream(_ diffs: [String], whole: String = MLBLiveFeedTests.liveGame) -> ScriptedTransport {
        let remaining = Locked(diffs)
        return ScriptedTransport { request in
            if request.path.hasSuffix("/feed/live") { return .response(FeedResponse(status: 200, body: Data(whole.utf8))) }
            guard let diff = remaining.next() else { return .response(FeedResponse(status: 500)) }
            return .response(FeedResponse(status: 200, body: Data(diff.utf8)))
        }
    }

    static func score(_ response: FeedResponse) throws -> BaseballScore {
        guard case .baseball(let score) = try FeedDecoding.match(try #require(response.body)).match.score else {
            throw InputError(field: "score", reason: "not baseball")
        }
        return score
    }

    @Test("the whole feed once; then a diff: empty is a 304 to a poll holding the ETag, operations change the snapshot")
    func diffs() async throws {
        let upstream = Self.upstream([
            "[]",
            """
            [{"diff": [{"op": "replace", "path": "/metaData/timeStamp", "value": "20250412_230600"},
                       {"op": "replace", "path": "/liveData/linescore/teams/away/runs", "value": 4},
                       {"op": "add", "path": "/liveData/plays/scoringPlays/-", "value": 2}]},
             {"diff": [{"op": "replace", "path": "/liveData/linescore/outs", "value": 2}]}]
            """,
        ])
        let transport = MLBFeedTransport(upstream: upstream, diffPatch: true)
        let first = try await transport.fetch(.match("mlb:123456"))
        #expect(first.status == 200)
        let etag = try #require(first.headers["etag"])
        #expect(etag == "\"mlb-\(Self.stamp)\"")
        #expect(try Self.score(first).away == 2)

        let unchanged = try await transport.fetch(FeedRequest(path: FeedRequest.match("mlb:123456").path, headers: ["if-none-match": etag]))
        #expect(unchanged.status == 304)

        let changed = try await transport.fetch(FeedRequest(path: FeedRequest.match("mlb:123456").path, headers: ["if-none-match": etag]))
        #expect(changed.status == 200)
        #expect(changed.headers["etag"] == "\"mlb-20250412_230600\"")
        let score = try Self.score(changed)
        #expect(score.away == 4 && score.outs == 2)
        #expect(upstream.requests.map(\.path) == [
            "/api/v1.1/game/123456/feed/live", Self.diffPath, Self.diffPath,
        ])
    }

    @Test("a diff that does not apply, an answer that is no diff, or a failed diff: the whole feed again", arguments: [
        #"[{"diff": [{"op": "replace", "path": "/liveData/nothing/here", "value": 1}]}]"#,
        #"[{"diff": [{"op": "test", "path": "/metaData/timeStamp", "value": "20000101_000000"}]}]"#,
        #"{"unexpected": true}"#,
        #"not json"#,
    ])
    func fallsBackToTheWholeFeed(diff: String) async throws {
        let upstream = Self.upstream([diff])
        let transport = MLBFeedTransport(upstream: upstream, diffPatch: true)
        _ = try await transport.fetch(.match("123456"))
        let again = try await transport.fetch(.match("123456"))
        #expect(again.status == 200)
        #expect(try Self.score(again).away == 2)
        #expect(upstream.requests.map(\.path) == ["/api/v1.1/game/123456/feed/live", Self.diffPath, "/api/v1.1/game/123456/feed/live"])

        // And a failing diff request (a 500) does the same.
        _ = try await transport.fetch(.match("123456"))
        #expect(upstream.requests.last?.path == "/api/v1.1/game/123456/feed/live")
    }

    @Test("a diff answered with a whole document takes it whole")
    func wholeDocumentInsteadOfADiff() async throws {
        let newer = MLBLiveFeedTests.liveGame.replacingOccurrences(of: #""runs": 2"#, with: #""runs": 7"#)
        let transport = MLBFeedTransport(upstream: Self.upstream([newer]), diffPatch: true)
        _ = try await transport.fetch(.match("123456"))
        #expect(try Self.score(try await transport.fetch(.match("123456"))).away == 7)
    }

    @Test(
        "on the real recorded game: a diff of the score gives what the whole changed feed gives, in a fraction of its bytes",
        .enabled(if: MLBLiveFeedTests.hasRealFile, "set MATCHCAST_REALDATA to the shared realdata folder"))
    func realGame() async throws {
        let whole = try String(contentsOf: try #require(MLBLiveFeedTests.realFile), encoding: .utf8)
        let diff = """
            [{"diff": [{"op": "replace", "path": "/metaData/timeStamp", "value": "20240701_214500"},
                       {"op": "replace", "path": "/liveData/linescore/teams/home/runs", "value": 2}]}]
            """
        let upstream = Self.upstream([diff], whole: whole)
        let transport = MLBFeedTransport(upstream: upstream, diffPatch: true)
        _ = try await transport.fetch(.match("mlb:744914"))
        let patched = try await transport.fetch(.match("mlb:744914"))
        #expect(upstream.requests.last?.path == "/api/v1.1/game/744914/feed/live/diffPatch?startTimecode=20240701_214404")

        var document = try #require(JSONValue.parse(Data(whole.utf8)))
        document = try JSONPatch(operations: [
            .init(op: "replace", path: "/metaData/timeStamp", value: .string("20240701_214500")),
            .init(op: "replace", path: "/liveData/linescore/teams/home/runs", value: .int(2)),
        ]).applied(to: document)
        let expected = try MLBLiveFeed.snapshot(from: try document.data()).snapshot
        var served = try FeedDecoding.match(try #require(patched.body)).match
        served.id = expected.id
        #expect(served == expected)
        #expect(try Self.score(patched).home == 2)
        #expect(diff.utf8.count * 1000 < whole.utf8.count, "\(diff.utf8.count) bytes of diff for \(whole.utf8.count) of feed")
    }
}

@Suite("JSON Patch (RFC 6902)")
struct JSONPatchTests {
    static func value(_ text: String) throws -> JSONValue {
        try #require(JSONValue.parse(Data(text.utf8)))
    }

    static func apply(_ patch: String, to document: String) throws -> JSONValue {
        try #require(JSONPatch(try value(patch))).applied(to: try value(document))
    }

    @Test("the RFC's examples: add, remove, replace, move, copy, test; escaped pointers; the end of an array")
    func operations() throws {
        #expect(try Self.apply(#"[{"op": "add", "path": "/baz", "value": "qux"}]"#, to: #"{"foo": "bar"}"#)
            == Self.value(#"{"baz": "qux", "foo": "bar"}"#))
        #expect(try Self.apply(#"[{"op": "add", "path": "/foo/1", "value": "qux"}]"#, to: #"{"foo": ["bar", "baz"]}"#)
            == Self.value(#"{"foo": ["bar", "qux", "baz"]}"#))
        #expect(try Self.apply(#"[{"op": "add", "path": "/foo/-", "value": ["abc"]}]"#, to: #"{"foo": ["bar"]}"#)
            == Self.value(#"{"foo": ["bar", ["abc"]]}"#))
        #expect(try Self.apply(#"[{"op": "remove", "path": "/foo/1"}]"#, to: #"{"foo": ["bar", "qux", "baz"]}"#)
            == Self.value(#"{"foo": ["bar", "baz"]}"#))
        #expect(try Self.apply(#"[{"op": "replace", "path": "/baz", "value": "boo"}]"#, to: #"{"baz": "qux", "foo": "bar"}"#)
            == Self.value(#"{"baz": "boo", "foo": "bar"}"#))
        #expect(try Self.apply(#"[{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]"#,
                               to: #"{"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}"#)
            == Self.value(#"{"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}"#))
        #expect(try Self.apply(#"[{"op": "move", "from": "/foo/1", "path": "/foo/3"}]"#, to: #"{"foo": ["all", "grass", "cows", "eat"]}"#)
            == Self.value(#"{"foo": ["all", "cows", "eat", "grass"]}"#))
        #expect(try Self.apply(#"[{"op": "copy", "from": "/a", "path": "/b"}]"#, to: #"{"a": {"x": 1}}"#)
            == Self.value(#"{"a": {"x": 1}, "b": {"x": 1}}"#))
        #expect(try Self.apply(#"[{"op": "add", "path": "/a~1b/m~0n", "value": 1}]"#, to: #"{"a/b": {}}"#)
            == Self.value(#"{"a/b": {"m~n": 1}}"#))
        #expect(try Self.apply(#"[{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]"#,
                               to: #"{"baz": "qux", "foo": ["a", 2, "c"]}"#)
            == Self.value(#"{"baz": "qux", "foo": ["a", 2, "c"]}"#))
    }

    @Test("an operation that cannot apply names itself and changes nothing")
    func failures() throws {
        for patch in [
            #"[{"op": "test", "path": "/baz", "value": "bar"}]"#,
            #"[{"op": "add", "path": "/baz/bat", "value": "qux"}]"#,
            #"[{"op": "remove", "path": "/nothing"}]"#,
            #"[{"op": "replace", "path": "/foo/9", "value": 1}]"#,
            #"[{"op": "move", "from": "/foo", "path": "/foo/0"}]"#,
            #"[{"op": "frobnicate", "path": "/foo"}]"#,
            #"[{"op": "add", "path": "foo", "value": 1}]"#,
            #"[{"op": "add", "path": "/foo/01", "value": 1}]"#,
        ] {
            #expect(throws: JSONPatch.Failure.self, "\(patch)") { try Self.apply(patch, to: #"{"baz": "qux", "foo": ["a"]}"#) }
        }
    }
}

/// A queue read by concurrent handlers.
private final class Locked: Sendable {
    private let items: Mutex<[String]>
    init(_ items: [String]) { self.items = Mutex(items) }
    func next() -> String? { items.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
}
