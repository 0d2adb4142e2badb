import Foundation
import Logging
import MatchcastCore
import Metrics
import Synchronization

/// Several providers of the same games, served as one native v1 feed under canonical ids (`GameIdentity`).
///
/// - **Lists.** `/live-matches` and `/schedule?date=` merge every provider's list: each of their matches is given
///   its canonical id (`GameRegistry`), and a game several providers list is shown once, as the best of them lists it
///   (or as it was last served, once its own polls began).
/// - **A game's polls** go to the best provider (by tier, then configuration order) that is healthy, within its
///   budget and knows the game. A failure, a timeout (the attempt waits at most the match's poll interval) or an
///   answer behind what was last shown moves the same poll on to the next provider, so a failing provider is replaced
///   within the poll it failed. After `failuresBeforeDisable` such answers in a row a provider is disabled for
///   `coolDown`, then probed; it takes its games back only with an answer that is not behind what was shown.
/// - **Never backwards.** An answer behind what was shown (`MatchProgress`: an earlier stage, a lower score, an
///   earlier period or clock) is a stale answer, and the next provider is asked. Only a correction is taken back:
///   the provider that showed the state answers behind it, and every other provider asked agrees.
/// - **Frozen.** A live game whose provider shows no change for `staleAfter` is checked against the next provider;
///   if that one is ahead, the first counts a stale answer and the game moves on.
/// - **Budgets.** A provider with a budget is never asked more often than it allows: a poll it cannot afford goes to
///   the next provider, or is answered with the last state and a `Retry-After` for when the budget allows again; the
///   interval given to the poller spreads the budget over the games the provider serves.
/// - **seq.** Every change served gets a `seq` that only grows (the wall clock in milliseconds, or one more than the
///   last), whichever provider it came from, so that the poller's and the lifecycle's guards hold across a switch.
public final class ProviderGroup: FeedTransport {
    /// One provider of the group.
    public struct Provider: Sendable {
        /// How logs, metrics and `/readyz` name it (`FeedSpec.publicName`): no credentials.
        public let name: String
        public let tier: ProviderTier
        public let transport: any FeedTransport
        public let budget: RequestBudget?
        /// Competition names it is used for (a match whose competition contains one of them, case and accents
        /// ignored); empty: every match it lists.
        public let competitions: [String]

        public init(
            name: String, tier: ProviderTier, transport: any FeedTransport, budget: RequestBudget? = nil, competitions: [String] = []
        ) {
            self.name = name
            self.tier = tier
            self.transport = transport
            self.budget = budget
            self.competitions = competitions.map { GameIdentity.words($0).joined(separator: " ") }.filter { !$0.isEmpty }
        }

        func serves(_ snapshot: MatchSnapshot) -> Bool {
            guard !competitions.isEmpty else { return true }
            let competition = GameIdentity.words(snapshot.competition ?? "").joined(separator: " ")
            return competitions.contains { competition.contains($0) }
        }
    }

    /// The providers, best tier first (configuration order within a tier).
    public let providers: [Provider]
    public let settings: FailoverSettings
    let registry: GameRegistry
    let health: Mutex<[ProviderHealth]>
    let served = Mutex(ServedGames())
    let lists: Mutex<[ListCache?]>
    let schedules = Mutex<[ScheduleKey: ListCache]>([:])
    let metrics: [ProviderMetrics]
    private let logger: Logger
    /// The wall clock, for `seq` and the lists' `generatedAt`.
    let now: @Sendable () -> Date

    /// The shortest wait for one provider however often its game is polled: a loaded loopback or a distant host may
    /// take this long to answer without anything being wrong.
    static let shortestAttempt = Duration.seconds(1)
    /// The interval asked of the poller when no provider said one.
    static let defaultIntervalMs = 5_000
    /// The most games whose served state is kept; the oldest half is dropped when full.
    static let servedCapacity = 50_000

    public init(
        providers: [Provider], settings: FailoverSettings = FailoverSettings(), logger: Logger = Logger(label: "matchcast.feeds"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        precondition(!providers.isEmpty, "a provider group needs at least one provider")
        let ordered = providers.enumerated().sorted { ($0.element.tier, $0.offset) < ($1.element.tier, $1.offset) }.map(\.element)
        self.providers = ordered
        self.settings = settings
        self.registry = GameRegistry(identity: settings.identity, startTolerance: Double(settings.startTolerance.components.seconds))
        self.health = Mutex(Array(repeating: ProviderHealth(), count: ordered.count))
        self.lists = Mutex(Array(repeating: nil, count: ordered.count))
        self.metrics = ordered.map { ProviderMetrics(provider: $0.name) }
        self.logger = logger
        self.now = now
    }

    /// Each provider's state, best first.
    public var status: [ProviderStatus] {
        let clock = ContinuousClock.now
        let states = health.withLock { $0 }
        return providers.indices.map { index in
            let state = states[index]
            let label: String
            var left: Double?
            if let until = state.disabledUntil {
                label = clock < until ? "disabled" : "probing"
                if clock < until {
                    let remaining = clock.duration(to: until).components
                    left = Double(remaining.seconds) + Double(remaining.attoseconds) / 1e18
                }
            } else {
                label = "healthy"
            }
            return ProviderStatus(
                name: providers[index].name, tier: providers[index].tier.rawValue, state: label,
                consecutiveFailures: state.consecutiveFailures, coolDownLeftSeconds: left, lastError: state.lastError,
                budget: providers[index].budget?.description)
        }
    }

    /// The name of the provider that served game `id` last; nil before its first answer.
    public func provider(serving id: String) -> String? {
        served.withLock { $0.games[id]?.provider }.map { providers[$0].name }
    }

    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        switch request.resource {
        case FeedRequest.liveMatches.path:
            return await liveMatches()
        case "/schedule":
            guard let date = request.queryValue("date"), FeedRequest.isCalendarDate(date) else {
                return NativeFeedBody.error(status: 400, code: "invalid_request", message: "schedule needs date=YYYY-MM-DD")
            }
            return await schedule(date)
        default:
            guard let id = FeedRouter.matchId(in: request), id.hasPrefix(GameIdentity.idPrefix) else {
                return NativeFeedBody.error(
                    status: 404, code: "not_found", message: "a provider group serves canonical ids (\(GameIdentity.idPrefix)…) only")
            }
            return try await match(id, request: request)
        }
    }

    // MARK: One game

    /// The games served, and how many each provider serves (a budget's interval is spread over them).
    struct ServedGames {
        var games: [String: ServedGame] = [:]
        var serving: [Int: Int] = [:]

        /// Forgets the half of the games asked least lately.
        mutating func dropOldest() {
            let sorted = games.sorted { $0.value.lastAsked < $1.value.lastAsked }
            for (id, _) in sorted.prefix(games.count / 2) { games[id] = nil }
            serving = [:]
            for game in games.values { if let provider = game.provider { serving[provider, default: 0] += 1 } }
        }
    }

    /// What was last served of a game, and what each provider last answered for it.
    struct ServedGame {
        var snapshot: MatchSnapshot?
        var provider: Int?
        var seq = 0
        var lastChange = ContinuousClock.now
        var lastAsked = ContinuousClock.now
        /// The provider's interval for this game, as it last asked (its `retryAfterMs`).
        var intervalMs: Int?
        /// Per provider: its last snapshot of the game (canonical id, no seq) and the validators it came with.
        var answers: [Int: ProviderAnswer] = [:]
    }

    struct ProviderAnswer {
        var snapshot: MatchSnapshot
        var headers: [String: String]
        var retryAfterMs: Int?
        /// The provider answered 304: this is its last answer again.
        var notModified = false
    }

    /// What one provider's answer to a game's poll came to.
    private enum Attempt {
        /// A usable snapshot (canonical id, no seq), with the provider's interval.
        case answered(ProviderAnswer)
        /// The provider does not know the game (404): it is looked for again later; not its fault.
        case notFound
        case failed(String)
    }

    private func match(_ id: String, request: FeedRequest) async throws -> FeedResponse {
        var members = registry.members(of: id)
        if members.isEmpty {
            await discover(id)
            members = registry.members(of: id)
        }
        guard !members.isEmpty else {
            return NativeFeedBody.error(
                status: 404, code: "not_found", message: "no provider of this group lists '\(id.prefix(100))' (yet)")
        }
        let clock = ContinuousClock.now
        let available = health.withLock { states in members.keys.sorted().filter { states[$0].isAvailable(at: clock) } }
        // With every provider disabled, each is asked anyway: a poll that gives up answers nothing at all.
        let candidates = available.isEmpty ? members.keys.sorted() : available
        let game = served.withLock { $0.games[id] }
        var reasons: [String] = []
        var someoneAnswered = false
        var budgetWait: Duration?
        var behind: [(provider: Int, answer: ProviderAnswer)] = []
        for provider in candidates {
            guard let providerId = members[provider] else { continue }
            if let wait = providers[provider].budget?.take() {
                budgetWait = min(budgetWait ?? wait, wait)
                metrics[provider].request(.budget)
                continue
            }
            switch await attempt(provider, gameId: id, providerId: providerId, held: game?.answers[provider], interval: game?.intervalMs) {
            case .notFound:
                metrics[provider].request(.notFound)
                registry.forget(provider: provider, of: id)
                reasons.append("\(providers[provider].name): not found")
            case .failed(let reason):
                metrics[provider].request(.failed)
                failed(provider, reason)
                reasons.append("\(providers[provider].name): \(reason)")
            case .answered(let answer):
                someoneAnswered = true
                if let shown = game?.snapshot, MatchProgress.isBehind(answer.snapshot, shown) {
                    record(answer, from: provider, for: id)
                    behind.append((provider, answer))
                    continue
                }
                // Whoever answered behind what was shown before this answer came counts a stale answer.
                for (late, _) in behind { stale(late, id: id) }
                metrics[provider].request(.ok)
                succeeded(provider)
                var current = accept(answer, from: provider, for: id)
                if let checked = await crossCheck(id, current: current, members: members) { current = checked }
                return respond(current, to: request)
            }
        }
        // The provider that showed the state takes it back, and every other provider asked agrees: a correction (a
        // goal ruled out), taken from the best of them. Otherwise an answer behind what was shown is a stale one.
        let everyoneAnswered = reasons.isEmpty && budgetWait == nil && behind.count == candidates.count
        if let (provider, answer) = behind.first, everyoneAnswered, behind.contains(where: { $0.provider == game?.provider }),
            behind.allSatisfy({ Self.sameProgress($0.answer.snapshot, answer.snapshot) })
        {
            metrics[provider].request(.ok)
            succeeded(provider)
            return respond(accept(answer, from: provider, for: id), to: request)
        }
        for (late, _) in behind { stale(late, id: id) }
        if let game, game.snapshot != nil, someoneAnswered || budgetWait != nil {
            return respond(game, to: request, retryAfter: budgetWait)
        }
        if let budgetWait, !someoneAnswered, reasons.isEmpty {
            return NativeFeedBody.error(
                status: 429, code: "budget", message: "every provider of '\(id.prefix(100))' has spent its budget for now",
                headers: ["retry-after": "\(Self.wholeSeconds(budgetWait))"])
        }
        return NativeFeedBody.error(
            status: 502, code: "providers_failed",
            message: "no provider answered for '\(id.prefix(100))': " + reasons.joined(separator: "; "))
    }

    /// An answer behind what was shown, not confirmed by the others: a stale answer for its provider.
    private func stale(_ provider: Int, id: String) {
        metrics[provider].request(.stale)
        let shownBy = served.withLock { $0.games[id]?.provider }.map { providers[$0].name } ?? "another provider"
        failed(provider, "stale: behind what \(shownBy) showed")
    }

    /// Neither is behind the other.
    package static func sameProgress(_ a: MatchSnapshot, _ b: MatchSnapshot) -> Bool {
        !MatchProgress.isBehind(a, b) && !MatchProgress.isBehind(b, a)
    }

    /// One provider's answer to `/matches/{its id}`, waited for at most the attempt timeout, bounded by the game's
    /// interval (but not below `shortestAttempt`) so that the next provider still answers within the next poll.
    private func attempt(_ provider: Int, gameId: String, providerId: String, held: ProviderAnswer?, interval: Int?) async -> Attempt {
        var request = FeedRequest.match(providerId)
        if let held {
            if let etag = held.headers["etag"] { request.headers["if-none-match"] = etag }
            if let modified = held.headers["last-modified"] { request.headers["if-modified-since"] = modified }
        }
        var timeout = settings.attemptTimeout
        if let interval { timeout = min(timeout, max(.milliseconds(interval), Self.shortestAttempt)) }
        let response: FeedResponse
        do {
            response = try await fetch(request, from: provider, timeout: timeout)
        } catch let error as FeedError {
            return .failed(error.description)
        } catch {
            return .failed("\(error)")
        }
        switch response.status {
        case 200:
            guard let body = response.body, !body.isEmpty else { return .failed("empty body from \(request.path)") }
            let decoded: MatchResponse
            do {
                decoded = try FeedDecoding.match(body)
            } catch {
                return .failed(FeedError.decode(error, path: request.path).description)
            }
            guard decoded.match.id == providerId else {
                return .failed("\(request.path) answered for '\(decoded.match.id.prefix(60))'")
            }
            var snapshot = decoded.match
            snapshot.id = gameId
            snapshot.seq = nil
            var headers: [String: String] = [:]
            headers["etag"] = response.headers["etag"]
            headers["last-modified"] = response.headers["last-modified"]
            return .answered(ProviderAnswer(snapshot: snapshot, headers: headers, retryAfterMs: decoded.retryAfterMs))
        case 304:
            guard var held else { return .failed("304 from \(request.path) without a request for one") }
            held.notModified = true
            if let value = response.headers["retry-after"], let delay = PollTimingPolicy.parseRetryAfter(value, now: now()) {
                held.retryAfterMs = Int(delay.wholeMilliseconds)
            }
            return .answered(held)
        case 404:
            return .notFound
        default:
            return .failed(FeedError.status(response.status, path: request.path).description)
        }
    }

    /// One request to a provider, given up after `timeout`.
    func fetch(_ request: FeedRequest, from provider: Int, timeout: Duration) async throws -> FeedResponse {
        let transport = providers[provider].transport
        return try await withThrowingTaskGroup(of: FeedResponse.self) { group in
            group.addTask { try await transport.fetch(request) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw FeedError.timeout(path: request.path)
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw FeedError.timeout(path: request.path) }
            return first
        }
    }

    /// Keeps a provider's answer without serving it (it was behind).
    private func record(_ answer: ProviderAnswer, from provider: Int, for id: String) {
        served.withLock { $0.games[id, default: ServedGame()].answers[provider] = answer }
    }

    /// Serves `answer`: a new `seq` when what it shows differs from what was served.
    @discardableResult
    private func accept(_ answer: ProviderAnswer, from provider: Int, for id: String) -> ServedGame {
        let clock = ContinuousClock.now
        let millis = Int(now().timeIntervalSince1970 * 1000)
        let (game, switched) = served.withLock { served -> (ServedGame, (from: Int?, to: Int)?) in
            if served.games[id] == nil, served.games.count >= Self.servedCapacity { served.dropOldest() }
            var game = served.games[id] ?? ServedGame()
            var kept = answer
            kept.notModified = false
            game.answers[provider] = kept
            game.lastAsked = clock
            game.intervalMs = answer.retryAfterMs ?? game.intervalMs
            // A 304 from the provider that served the last answer changes nothing: no comparison on that path.
            let unchanged = answer.notModified && game.provider == provider
            if !unchanged, game.snapshot.map({ !Self.sameContent($0, answer.snapshot) }) ?? true {
                game.seq = max(game.seq + 1, millis)
                var snapshot = answer.snapshot
                snapshot.seq = game.seq
                game.snapshot = snapshot
                game.lastChange = clock
            }
            var switched: (from: Int?, to: Int)?
            if game.provider != provider {
                switched = (game.provider, provider)
                if let from = game.provider { served.serving[from, default: 1] -= 1 }
                served.serving[provider, default: 0] += 1
                game.provider = provider
            }
            served.games[id] = game
            return (game, switched)
        }
        if let switched, let from = switched.from {
            metrics[switched.to].switchedTo()
            logger.notice("provider switch", metadata: [
                "match": "\(id)", "from": "\(providers[from].name)", "to": "\(providers[switched.to].name)",
            ])
        }
        return game
    }

    /// A live game its provider has shown no change of for `staleAfter` is asked of the next provider that knows it;
    /// when that one is ahead, the first counts a stale answer and the game moves on. Once per `staleAfter` at most.
    private func crossCheck(_ id: String, current: ServedGame, members: [Int: String]) async -> ServedGame? {
        guard let staleAfter = settings.staleAfter, let shown = current.snapshot, shown.status == .live,
            let serving = current.provider, current.lastChange.duration(to: .now) >= staleAfter
        else { return nil }
        served.withLock { $0.games[id]?.lastChange = .now }
        let clock = ContinuousClock.now
        let other = health.withLock { states in
            members.keys.sorted().first { $0 != serving && states[$0].isAvailable(at: clock) }
        }
        guard let other, let providerId = members[other], providers[other].budget?.take() == nil else { return nil }
        guard case .answered(let answer) = await attempt(
            other, gameId: id, providerId: providerId, held: current.answers[other], interval: current.intervalMs)
        else { return nil }
        guard !MatchProgress.isBehind(answer.snapshot, shown), MatchProgress.isBehind(shown, answer.snapshot) else {
            record(answer, from: other, for: id)
            return nil
        }
        metrics[serving].request(.stale)
        failed(serving, "stale: no change for \(staleAfter) while \(providers[other].name) moved on")
        metrics[other].request(.ok)
        succeeded(other)
        return accept(answer, from: other, for: id)
    }

    /// The served state as an answer: 304 when the poller holds it, else the snapshot with the interval to poll at.
    private func respond(_ game: ServedGame, to request: FeedRequest, retryAfter: Duration? = nil) -> FeedResponse {
        guard let snapshot = game.snapshot else {
            return NativeFeedBody.error(status: 502, code: "providers_failed", message: "nothing served yet")
        }
        var interval = game.intervalMs ?? Self.defaultIntervalMs
        if let provider = game.provider, let budget = providers[provider].budget {
            let sharers = served.withLock { $0.serving[provider] ?? 0 }
            interval = max(interval, Int(budget.spacing(sharers: sharers).wholeMilliseconds))
        }
        if let retryAfter { interval = max(interval, Int(retryAfter.wholeMilliseconds)) }
        let etag = "\"g\(game.seq)\""
        var headers = ["etag": etag]
        if interval >= 1_000 { headers["retry-after"] = "\((interval + 999) / 1_000)" }
        if request.headers["if-none-match"] == etag {
            return FeedResponse(status: 304, headers: headers)
        }
        return NativeFeedBody.response(status: 200, headers: headers, encoding: NativeFeedBody.Match(retryAfterMs: interval, match: snapshot))
    }

    // MARK: Health

    func failed(_ provider: Int, _ reason: String) {
        let disabled = health.withLock {
            $0[provider].failed(reason, at: .now, threshold: settings.failuresBeforeDisable, coolDown: settings.coolDown)
        }
        if disabled {
            metrics[provider].healthy(false)
            logger.warning("provider disabled", metadata: [
                "provider": "\(providers[provider].name)", "cool_down": "\(settings.coolDown)", "error": "\(reason)",
            ])
        }
    }

    func succeeded(_ provider: Int) {
        if health.withLock({ $0[provider].succeeded() }) {
            metrics[provider].healthy(true)
            logger.notice("provider back", metadata: ["provider": "\(providers[provider].name)"])
        }
    }

    // MARK: Helpers

    /// Equal but for `seq` and `updatedAt`, which every provider writes its own way.
    static func sameContent(_ a: MatchSnapshot, _ b: MatchSnapshot) -> Bool {
        var (a, b) = (a, b)
        (a.seq, b.seq, a.updatedAt, b.updatedAt) = (nil, nil, nil, nil)
        return a == b
    }

    static func wholeSeconds(_ duration: Duration) -> Int64 {
        (duration.wholeMilliseconds + 999) / 1_000
    }


    /// The days before and after `day` (`YYYY-MM-DD`).
    static func neighbours(of day: String) -> [String] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = day.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, let date = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))
        else { return [] }
        let identity = GameIdentity(timeZone: calendar.timeZone)
        return [-1, 1].compactMap { calendar.date(byAdding: .day, value: $0, to: date).map(identity.day(of:)) }
    }
}
