import Foundation
import MatchcastCore

/// What a user types to find a match ("arsenal", "nadal wimbledon", "MI CSK"): a match is found when every word of
/// the query appears in its id, its teams' names or short names, its competition or its venue, ignoring case and
/// accents ("atletico" finds "Atlético").
public struct MatchSearch: Sendable, Hashable {
    /// The query's words, folded.
    public let words: [String]

    /// Nil when the query has no word to look for.
    public init?(_ query: String) {
        let words = Self.fold(query).split(whereSeparator: { $0.isWhitespace }).map(String.init)
        guard !words.isEmpty else { return nil }
        self.words = words
    }

    public func matches(_ snapshot: MatchSnapshot) -> Bool {
        let fields = [
            snapshot.id, snapshot.home.name, snapshot.home.short, snapshot.away.name, snapshot.away.short,
            snapshot.competition ?? "", snapshot.venue ?? "",
        ]
        let text = Self.fold(fields.joined(separator: " "))
        return words.allSatisfy { text.contains($0) }
    }

    static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
    }
}
