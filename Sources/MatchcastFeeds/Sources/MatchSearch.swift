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

/// The matches each feed knows now: its live list and its schedule of given days, gathered side by side.
public enum FeedCatalog {
    /// A match, and the feed (by `FeedRouter.Member.name`) that listed it.
    public struct Listing: Sendable {
        public var feed: String
        public var snapshot: MatchSnapshot
    }

    /// What a feed could not answer.
    public struct Problem: Sendable, CustomStringConvertible {
        public var feed: String
        public var error: FeedError

        public var description: String { "\(feed): \(error)" }
    }

    /// Every member's live list and its schedule of each of `dates` (`YYYY-MM-DD`), each feed asked in a task of
    /// its own. A match in both the live list and a schedule is listed once, as the live list has it; a feed that
    /// offers no schedule (a 404) is not a problem. Sorted by start time, then id.
    public static func gather(_ feeds: FeedRouter, dates: [String], policy: PollTimingPolicy = PollTimingPolicy()) async
        -> (listings: [Listing], problems: [Problem])
    {
        await withTaskGroup(of: (listings: [Listing], problems: [Problem]).self) { group in
            for member in feeds.members {
                group.addTask { await gather(member, dates: dates, policy: policy) }
            }
            var listings: [Listing] = []
            var problems: [Problem] = []
            for await part in group {
                listings += part.listings
                problems += part.problems
            }
            listings.sort { ($0.snapshot.startsAt ?? .distantFuture, $0.snapshot.id) < ($1.snapshot.startsAt ?? .distantFuture, $1.snapshot.id) }
            problems.sort { $0.feed < $1.feed }
            return (listings, problems)
        }
    }

    private static func gather(_ member: FeedRouter.Member, dates: [String], policy: PollTimingPolicy) async
        -> (listings: [Listing], problems: [Problem])
    {
        var seen: Set<String> = []
        var listings: [Listing] = []
        var problems: [Problem] = []
        func add(_ snapshots: [MatchSnapshot]) {
            for snapshot in snapshots where seen.insert(snapshot.id).inserted {
                listings.append(Listing(feed: member.name, snapshot: snapshot))
            }
        }
        do {
            add(try await LiveListSource(transport: member.transport, policy: policy).refresh())
        } catch let error as FeedError {
            if error.status != 404 { problems.append(Problem(feed: member.name, error: error)) }
        } catch {
            problems.append(Problem(feed: member.name, error: .transport(error, path: FeedRequest.liveMatches.path)))
        }
        let schedules = ScheduleSource(transport: member.transport, policy: policy)
        for date in dates {
            do {
                add(try await schedules.refresh(date: date).matches)
            } catch let error as FeedError {
                if error.status != 404 { problems.append(Problem(feed: member.name, error: error)) }
            } catch {
                problems.append(Problem(feed: member.name, error: .transport(error, path: FeedRequest.schedule(date: date).path)))
            }
        }
        return (listings, problems)
    }
}
