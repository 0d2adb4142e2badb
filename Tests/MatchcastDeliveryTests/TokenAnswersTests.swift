import Foundation
import MatchcastDelivery
import Testing

// The last answer per device token, bounded in memory: the newest wins, and the oldest tokens are let go first.
@Suite("Token answers")
struct TokenAnswersTests {
    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds) }

    @Test func theLastAnswerWinsAndTheOldestTokensGoFirst() {
        let answers = TokenAnswers(capacity: 4)
        answers.record([("a", 429, "TooManyRequests"), ("b", 200, nil)], at: Self.at(0))
        answers.record([("a", 200, nil)], at: Self.at(1))
        #expect(answers.last(token: "a") == TokenAnswers.Answer(status: 200, reason: nil, at: Self.at(1)))
        #expect(answers.last(token: "b")?.status == 200)
        #expect(answers.last(token: "c") == nil)
        // Two tokens per generation: the answer for "a" began a new one (with "a" alone), "b" stayed in the one before.
        answers.record([("c", 410, "Unregistered")], at: Self.at(2))
        #expect(answers.last(token: "b")?.status == 200, "one generation back")
        answers.record([("d", 200, nil)], at: Self.at(3))
        #expect(answers.last(token: "b") == nil, "two generations back: let go")
        #expect(answers.last(token: "a")?.at == Self.at(1) && answers.last(token: "c")?.reason == "Unregistered")
        answers.record([("e", 200, nil), ("f", 200, nil)], at: Self.at(4))
        #expect(answers.last(token: "a") == nil && answers.last(token: "c") == nil)
        #expect(answers.last(token: "d")?.at == Self.at(3) && answers.last(token: "f")?.at == Self.at(4))
    }
}
