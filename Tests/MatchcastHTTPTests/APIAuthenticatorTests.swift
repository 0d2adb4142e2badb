import Foundation
import MatchcastCore
@testable import MatchcastHTTP
import Testing

@Suite("HTTP API: a request's bearer credential and path parameters, read without Foundation")
struct APIAuthenticatorTests {
    @Test("a bearer credential: the scheme in any case after any spaces, the credential trimmed, too long refused")
    func bearer() {
        let longest = String(repeating: "k", count: APIAuthenticator.maxCredentialLength)
        let cases: [(String, String?)] = [
            ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER abc", "abc"), ("bEaReR abc", "abc"),
            ("  Bearer abc", "abc"), ("Bearer   abc \t ", "abc"), ("Bearer \tabc", "abc"), ("Bearer a b", "a b"),
            ("Bearer " + longest, longest),
            ("Bearer " + longest + "k", nil), ("Bearer", nil), ("Bearer ", nil), ("Bearer  \t ", nil),
            ("Bearer\tabc", nil), ("\tBearer abc", nil), ("Basic abc", nil), ("Bearerx abc", nil), ("Beare abc", nil),
            ("", nil), (" ", nil), ("Bearer\u{2}abc", nil),
            // A byte outside ASCII anywhere: refused (Foundation's reading took a no-break space for white space).
            ("Bearer abc\u{A0}", nil), ("Bearer\u{A0}abc", nil), ("Bearer ab\u{E9}c", nil),
        ]
        for (value, expected) in cases {
            #expect(APIAuthenticator.bearer(fromHeader: value) == expected, "\(value.debugDescription)")
        }
    }

    /// How the credential was read before it was read byte by byte: Foundation's Unicode-aware splitting, lowercasing
    /// and trimming. The reference the byte reading is held to for ASCII values.
    private static func throughFoundation(_ value: String) -> String? {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let credential = parts[1].trimmingCharacters(in: .whitespaces)
        guard !credential.isEmpty, credential.utf8.count <= APIAuthenticator.maxCredentialLength else { return nil }
        return credential
    }

    @Test("read byte by byte, an ASCII value gives what the earlier Foundation reading gave, for 20,000 random values")
    func bearerBytesMatchFoundation() {
        var rng = SeededGenerator(seed: 51)
        // Bytes that a scheme, a separator or a credential is made of, and a few that are none of those.
        let alphabet = Array(" \t\u{B}\u{C}\r\n\u{0}\u{7F}BbEeAaRrXx09-._~+/=".unicodeScalars)
        var matched = 0
        for _ in 0..<20_000 {
            let prefix = ["", "Bearer ", "bearer", " BEARER  ", "Bearer\t"].randomElement(using: &rng)!
            let tail = String(String.UnicodeScalarView(
                (0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
            let value = prefix + tail
            let fast = APIAuthenticator.bearer(fromHeader: value)
            #expect(fast == Self.throughFoundation(value), "\(value.debugDescription)")
            if fast != nil { matched += 1 }
        }
        // Both outcomes were exercised, not only refusals.
        #expect(matched > 1_000)
    }

    @Test("a path parameter is percent-decoded; one without a '%' is returned as it is; an invalid escape stays")
    func percentDecoded() {
        #expect(APIRoutes.percentDecoded("ipl%3Am41") == "ipl:m41")
        #expect(APIRoutes.percentDecoded("epl-mun-liv") == "epl-mun-liv")
        #expect(APIRoutes.percentDecoded("caf%C3%A9") == "café")
        #expect(APIRoutes.percentDecoded("bad%zz") == "bad%zz")
        #expect(APIRoutes.percentDecoded("%") == "%")
        #expect(APIRoutes.percentDecoded("") == "")
    }
}
