import ArgumentParser
import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastFeeds

/// `matchcast feeds`: what the configured feeds know, asked now.
struct FeedsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feeds",
        abstract: "Ask the configured feeds: find a match to follow, or check that each answers.",
        subcommands: [Search.self, Status.self]
    )

    /// Which feeds: `--feed` and `--provider` (each more than once for several), else the `feed`, `feeds` and
    /// `failover` keys of `--config` or the environment, as serve reads them.
    struct FeedOptions: ParsableArguments {
        @Option(help: "A feed as serve takes it (a native v1 base URL, fake, mlb, nhl, espn:{sport}/{league}, ...); more than once for several. Default: the feed of --config or MATCHCAST_FEED, else the fake feed.")
        var feed: [String] = []

        @Option(help: "A provider of the failover group as serve takes it (nhl;tier=official, espn:hockey/nhl;budget=10/min); more than once for several. Its games are listed under canonical ids (game:…).")
        var provider: [String] = []

        @Option(help: "A YAML configuration file whose feed, feeds and failover keys name the feeds.")
        var config: String?

        @Option(help: "Seconds to wait for each answer.")
        var timeout: Double = 10

        /// The feeds and providers to ask, as serve would poll them.
        func configuration(environment: [String: String] = ProcessInfo.processInfo.environment) throws
            -> (specs: [FeedSpec], providers: [ProviderEntry], failover: FailoverSettings)
        {
            guard timeout > 0, timeout <= 300 else { throw ValidationError("--timeout must be in (0, 300] seconds") }
            var flags: [String: String] = [:]
            flags["feed"] = feed.isEmpty ? nil : feed.joined(separator: ",")
            flags["feeds"] = provider.isEmpty ? nil : provider.joined(separator: ",")
            // Feeds given as flags replace the configured ones; without any, the configured ones are asked.
            if !feed.isEmpty, provider.isEmpty { flags["feeds"] = "" }
            if feed.isEmpty, !provider.isEmpty { flags["feed"] = "" }
            let loaded: BrokerConfiguration
            do {
                loaded = try ConfigurationLoader.load(
                    fileText: try ConfigurationLoader.fileText(config), environment: environment, flags: flags,
                    only: { $0 == "feed" || $0 == "feeds" || $0.hasPrefix("failover.") })
            } catch {
                throw ValidationError(SinkOptions.message(error))
            }
            do {
                let specs = loaded.feed.trimmingCharacters(in: .whitespaces).isEmpty ? [] : try FeedSpec.list(parsing: loaded.feed)
                return (specs, try ProviderEntry.list(parsing: loaded.providers), loaded.failover.settings)
            } catch {
                throw ValidationError(error.description)
            }
        }

        /// Runs `body` with the feeds (and the provider group) behind one router, and the HTTP client they need shut
        /// down afterwards.
        func withFeeds<T>(_ body: (FeedRouter) async throws -> T) async throws -> T {
            let (specs, providers, failover) = try configuration()
            let needsClient = specs.contains(where: \.needsHTTPClient) || providers.contains(where: \.spec.needsHTTPClient)
            let client = needsClient ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
            do {
                var settings = failover
                settings.attemptTimeout = .milliseconds(Int64(timeout * 1000))
                let router = try FeedRouter(
                    specs: specs, providers: providers, failover: settings, client: client, clock: ContinuousClock(),
                    timeout: .milliseconds(Int64(timeout * 1000)))
                let result = try await body(router)
                try await client?.shutdown()
                return result
            } catch {
                try? await client?.shutdown()
                throw error
            }
        }
    }

    /// Answers as a feed gives them: the interval it asks for, unclamped, and no jitter.
    static let asked = PollTimingPolicy(
        defaultInterval: .seconds(10), minInterval: .milliseconds(1), maxInterval: .seconds(86_400), jitter: 0,
        backoffBase: .seconds(1), backoffCap: .seconds(1))

    struct Search: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find matches by team, competition, venue or id in the feeds' live lists and schedules.",
            discussion: """
                Every word of the query must appear (case and accents ignored) in the match's teams, competition, \
                venue or id. Looks at each feed's live list and its schedule of --date (today, UTC, by default); \
                a feed without schedules is asked for its live list only. Prints one match per line: id, sport, \
                status, start, teams, competition, feed (--json: one JSON object per line). Exits 0 when \
                something was found, 1 when nothing was (or no feed answered), 64 on bad options.

                Examples:
                  matchcast feeds search arsenal --feed espn:soccer/eng.1 --feed espn:soccer/uefa.champions
                  matchcast feeds search "mumbai chennai" --feed fake --date 2026-04-21
                  matchcast feeds search rangers --config /etc/matchcast/matchcast.yaml --date 2026-04-21
                """)

        @Argument(help: "The words to look for.") var query: [String]
        var search: MatchSearch? { MatchSearch(query.joined(separator: " ")) }
        @OptionGroup var feeds: FeedOptions
        @Option(help: "A day whose schedule to look in (YYYY-MM-DD, more than once for several). Default: today, UTC.")
        var date: [String] = []
        @Flag(help: "One JSON object per line.") var json = false

        func validate() throws {
            guard search != nil else { throw ValidationError("give at least one word to look for") }
            for day in date where !FeedRequest.isCalendarDate(day) {
                throw ValidationError("--date '\(day.prefix(40))' is not a YYYY-MM-DD date")
            }
        }

        func run() async throws {
            guard let search else { throw ValidationError("give at least one word to look for") }
            let days = date.isEmpty ? [ScheduleSource.dateString(for: Date(), in: TimeZone(identifier: "UTC") ?? .current)] : date
            let (listings, problems) = try await feeds.withFeeds { router in
                await FeedCatalog.gather(router, dates: days, policy: FeedsCommand.asked)
            }
            for problem in problems { StandardStreams.err("matchcast feeds search: \(problem)") }
            let found = listings.filter { search.matches($0.snapshot) }
            for listing in found {
                StandardStreams.out(json ? Self.json(listing) : Self.line(listing))
            }
            if found.isEmpty {
                StandardStreams.err("matchcast feeds search: no match for '\(query.joined(separator: " ").prefix(80))'")
                throw ExitCode(1)
            }
        }

        static func line(_ listing: FeedCatalog.Listing) -> String {
            let match = listing.snapshot
            let starts = match.startsAt.map { Self.minute.string(from: $0) } ?? "-"
            return [
                match.id, match.sport.rawValue, match.status.rawValue, starts, "\(match.home.name) v \(match.away.name)",
                match.competition ?? "-", listing.feed,
            ].joined(separator: "  ")
        }

        private struct Line: Encodable {
            var id: String
            var sport: String
            var status: String
            var startsAt: Date?
            var home: String
            var away: String
            var competition: String?
            var venue: String?
            var feed: String
        }

        static func json(_ listing: FeedCatalog.Listing) -> String {
            let match = listing.snapshot
            let line = Line(
                id: match.id, sport: match.sport.rawValue, status: match.status.rawValue, startsAt: match.startsAt,
                home: match.home.name, away: match.away.name, competition: match.competition, venue: match.venue,
                feed: listing.feed)
            return (try? JSON.encoder().encode(line)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }

        /// `2026-04-21 14:00Z`.
        static let minute: DateFormatter = {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd HH:mm'Z'"
            return formatter
        }()
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask each feed for its live list once and say how it answered.",
            discussion: """
                One line per feed: its name, ok or failed, how long the answer took, how many live matches it \
                listed (and entries it could not read), and the interval it asks to be polled at; or what failed. \
                Exits 0 when every feed answered, 1 when any did not, 64 on bad options.

                Examples:
                  matchcast feeds status --feed espn:soccer/eng.1 --feed nhl
                  matchcast feeds status --config /etc/matchcast/matchcast.yaml
                """)

        @OptionGroup var feeds: FeedOptions

        func run() async throws {
            let lines = try await feeds.withFeeds { router in
                // A provider group is asked provider by provider: which of them answers is what matters.
                let members = router.members.flatMap { member -> [FeedRouter.Member] in
                    guard let group = member.transport as? ProviderGroup else { return [member] }
                    return group.providers.map { provider in
                        let budget = provider.budget.map { ", budget \($0.description)" } ?? ""
                        return FeedRouter.Member(
                            name: "\(provider.name) [\(provider.tier.rawValue)\(budget)]", idPrefix: nil, transport: provider.transport)
                    }
                }
                return await withTaskGroup(of: (Int, String, Bool).self) { group in
                    for (index, member) in members.enumerated() {
                        group.addTask {
                            let (line, ok) = await Self.ask(member)
                            return (index, line, ok)
                        }
                    }
                    var lines: [(Int, String, Bool)] = []
                    for await line in group { lines.append(line) }
                    return lines.sorted { $0.0 < $1.0 }
                }
            }
            for (_, line, _) in lines { StandardStreams.out(line) }
            if lines.contains(where: { !$0.2 }) { throw ExitCode(1) }
        }

        /// One line for `member`, and whether it answered.
        static func ask(_ member: FeedRouter.Member) async -> (String, Bool) {
            let source = LiveListSource(transport: member.transport, policy: FeedsCommand.asked)
            let sent = ContinuousClock.now
            let result: PollResult<LiveListPollOutcome>
            do {
                result = try await source.poll()
            } catch {
                return ("\(member.name)  failed  \(error)", false)
            }
            let took = Int(((ContinuousClock.now - sent).seconds * 1000).rounded())
            let every = String(format: "%.1f", result.delay.seconds)
            switch result.outcome {
            case .updated(let update):
                let unreadable = update.failures.isEmpty ? "" : ", \(update.failures.count) unreadable"
                return ("\(member.name)  ok  \(took) ms  \(update.matches.count) live\(unreadable)  poll every \(every) s", true)
            case .unchanged:
                return ("\(member.name)  ok  \(took) ms  unchanged  poll every \(every) s", true)
            case .failed(let error) where error.status == 404:
                return ("\(member.name)  ok  \(took) ms  no live list (404: follow its matches by id)", true)
            case .failed(let error):
                return ("\(member.name)  failed  \(took) ms  \(error)", false)
            }
        }
    }
}
