import Foundation
import MatchcastCore

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
        /// What `fetch` lists, or what failed (a 404: the feed offers no such list, not a problem).
        func gather(path: String, _ fetch: () async throws -> [MatchSnapshot]) async {
            do {
                for snapshot in try await fetch() where seen.insert(snapshot.id).inserted {
                    listings.append(Listing(feed: member.name, snapshot: snapshot))
                }
            } catch {
                let error = error as? FeedError ?? .transport(error, path: path)
                if error.status != 404 { problems.append(Problem(feed: member.name, error: error)) }
            }
        }
        await gather(path: FeedRequest.liveMatches.path) {
            try await LiveListSource(transport: member.transport, policy: policy).refresh()
        }
        let schedules = ScheduleSource(transport: member.transport, policy: policy)
        for date in dates {
            await gather(path: FeedRequest.schedule(date: date).path) { try await schedules.refresh(date: date).matches }
        }
        return (listings, problems)
    }
}
