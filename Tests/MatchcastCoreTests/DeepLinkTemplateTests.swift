import MatchcastCore
import Testing

@Suite("deep link template: checked once, made per match")
struct DeepLinkTemplateTests {
    @Test("a match id goes in where {matchId} is, encoded where a path needs it")
    func links() throws {
        let app = try DeepLinkTemplate("myapp://match/{matchId}")
        #expect(app.link(matchId: "ipl-2026-m41") == "myapp://match/ipl-2026-m41")
        #expect(app.link(matchId: "mlb:745912") == "myapp://match/mlb%3A745912")
        let web = try DeepLinkTemplate("https://scores.example.com/m/{matchId}?from=push")
        #expect(web.link(matchId: "a.b_c~d") == "https://scores.example.com/m/a.b_c~d?from=push")
        #expect(web.link(matchId: "é/ü") == "https://scores.example.com/m/%C3%A9%2F%C3%BC?from=push")
    }

    static let refused: [(String, String)] = [
        ("", "bytes"),
        ("match/{matchId}", "scheme"),
        ("://x/{matchId}", "scheme"),
        ("1app://x/{matchId}", "scheme"),
        ("myapp://match", "exactly once"),
        ("myapp://{matchId}/{matchId}", "exactly once"),
        ("myapp://match/{matchId} now", "spaces"),
        ("myapp://match/\"{matchId}\"", "quotes"),
        ("myapp://match/{matchId}/" + String(repeating: "x", count: 600), "bytes"),
    ]

    @Test("a template that cannot make a link is refused, saying why", arguments: refused)
    func refusedTemplates(template: String, says: String) {
        do {
            _ = try DeepLinkTemplate(template)
            Issue.record("'\(template)' was taken")
        } catch {
            #expect(error.description.contains(says), "\(error)")
        }
    }
}
