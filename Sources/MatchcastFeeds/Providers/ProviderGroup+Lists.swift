import Foundation
import MatchcastCore

/// A provider group's live list and schedules: every provider's, merged under canonical ids.
extension ProviderGroup {
    struct ScheduleKey: Hashable {
        var provider: Int
        var date: String
    }

    /// A provider's list answer: its matches under canonical ids, when it came, and the interval it asked for.
    struct ListCache {
        var matches: [(id: String, snapshot: MatchSnapshot)]
        var at: ContinuousClock.Instant
        var intervalMs: Int?
        var headers: [String: String]
    }

    /// Every provider's live list merged; a provider's list is asked again once its interval is over.
    func liveMatches() async -> FeedResponse {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers.indices where listIsDue(provider) {
                group.addTask { await self.refreshList(provider) }
            }
        }
        // A list older than two of its intervals is dropped, whether its provider failed or is cooling down: a dead
        // provider's games leave the list.
        let clock = ContinuousClock.now
        let caches = lists.withLock { caches in
            for provider in caches.indices {
                if let cache = caches[provider], cache.at.duration(to: clock) > listInterval(provider, cache) * 2 { caches[provider] = nil }
            }
            return caches
        }
        guard caches.contains(where: { $0 != nil }) else {
            let reasons = health.withLock { states in states.indices.compactMap { i in states[i].lastError.map { "\(providers[i].name): \($0)" } } }
            return NativeFeedBody.error(
                status: 502, code: "providers_failed", message: "no provider's live list answered: " + reasons.joined(separator: "; "))
        }
        let intervals = caches.compactMap { $0?.intervalMs }
        let merged = merge(caches.compactMap { $0 })
        return NativeFeedBody.response(status: 200, encoding: NativeFeedBody.LiveMatches(
            retryAfterMs: intervals.min() ?? Self.defaultIntervalMs, generatedAt: now(), matches: merged))
    }

    private func listIsDue(_ provider: Int) -> Bool {
        let clock = ContinuousClock.now
        guard health.withLock({ $0[provider].isAvailable(at: clock) }) else { return false }
        guard let cache = lists.withLock({ $0[provider] }) else { return true }
        return cache.at.duration(to: clock) >= listInterval(provider, cache)
    }

    /// How often a provider's live list is asked: the interval it asked for, or less often when its budget says so.
    private func listInterval(_ provider: Int, _ cache: ListCache) -> Duration {
        let interval = Duration.milliseconds(cache.intervalMs ?? Self.defaultIntervalMs)
        guard let budget = providers[provider].budget else { return interval }
        return max(interval, budget.spacing(sharers: 1))
    }

    private func refreshList(_ provider: Int) async {
        guard providers[provider].budget?.take() == nil else { return }
        var request = FeedRequest.liveMatches
        let held = lists.withLock { $0[provider] }
        if let etag = held?.headers["etag"] { request.headers["if-none-match"] = etag }
        let response: FeedResponse
        do {
            response = try await fetch(request, from: provider, timeout: settings.attemptTimeout)
        } catch {
            listFailed(provider, (error as? FeedError)?.description ?? "\(error)")
            return
        }
        switch response.status {
        case 200:
            let decoded: LiveMatchesResponse
            do {
                decoded = try FeedDecoding.liveMatches(response.body ?? Data())
            } catch {
                listFailed(provider, FeedError.decode(error, path: request.path).description)
                return
            }
            let matches = decoded.matches.filter(providers[provider].serves)
            let ids = registry.register(matches, provider: provider, fallbackDay: settings.identity.day(of: now()))
            var headers: [String: String] = [:]
            headers["etag"] = response.headers["etag"]
            let cache = ListCache(
                matches: Array(zip(ids, matches)).map { ($0.0, $0.1) }, at: .now, intervalMs: decoded.retryAfterMs, headers: headers)
            lists.withLock { $0[provider] = cache }
            metrics[provider].request(.ok)
            succeeded(provider)
        case 304 where held != nil:
            lists.withLock { $0[provider]?.at = .now }
            metrics[provider].request(.ok)
            succeeded(provider)
        case 404:
            // No live list (MLB): its games are found in schedules; asked again at the default interval.
            lists.withLock { $0[provider] = ListCache(matches: [], at: .now, intervalMs: 60_000, headers: [:]) }
        default:
            listFailed(provider, FeedError.status(response.status, path: request.path).description)
        }
    }

    private func listFailed(_ provider: Int, _ reason: String) {
        metrics[provider].request(.failed)
        failed(provider, reason)
    }

    /// The schedule of `date`, every provider's merged.
    func schedule(_ date: String) async -> FeedResponse {
        let caches = await schedules(of: date)
        return NativeFeedBody.response(status: 200, encoding: NativeFeedBody.Schedule(date: date, matches: merge(caches)))
    }

    /// Each available provider's schedule of `date`, asked again once `scheduleTTL` is over.
    private func schedules(of date: String) async -> [ListCache] {
        let clock = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for provider in providers.indices {
                let key = ScheduleKey(provider: provider, date: date)
                let fresh = schedules.withLock { $0[key].map { $0.at.duration(to: clock) < settings.scheduleTTL } ?? false }
                guard !fresh, health.withLock({ $0[provider].isAvailable(at: clock) }) else { continue }
                group.addTask { await self.refreshSchedule(key) }
            }
        }
        return schedules.withLock { caches in providers.indices.compactMap { caches[ScheduleKey(provider: $0, date: date)] } }
    }

    private func refreshSchedule(_ key: ScheduleKey) async {
        guard providers[key.provider].budget?.take() == nil else { return }
        let request = FeedRequest.schedule(date: key.date)
        let response: FeedResponse
        do {
            response = try await fetch(request, from: key.provider, timeout: settings.attemptTimeout)
        } catch {
            metrics[key.provider].request(.failed)
            failed(key.provider, (error as? FeedError)?.description ?? "\(error)")
            return
        }
        var matches: [MatchSnapshot] = []
        switch response.status {
        case 200:
            do {
                matches = try FeedDecoding.schedule(response.body ?? Data()).matches.filter(providers[key.provider].serves)
            } catch {
                metrics[key.provider].request(.failed)
                failed(key.provider, FeedError.decode(error, path: request.path).description)
                return
            }
            metrics[key.provider].request(.ok)
            succeeded(key.provider)
        case 404:
            break  // no schedules (MLB): nothing to find there
        default:
            metrics[key.provider].request(.failed)
            failed(key.provider, FeedError.status(response.status, path: request.path).description)
            return
        }
        let ids = registry.register(matches, provider: key.provider, fallbackDay: key.date)
        let cache = ListCache(matches: Array(zip(ids, matches)).map { ($0.0, $0.1) }, at: .now, intervalMs: nil, headers: [:])
        schedules.withLock { caches in
            if caches.count >= 1_000 { caches.removeAll(keepingCapacity: true) }
            caches[key] = cache
        }
    }

    /// A game nobody has listed yet (followed ahead of time, or forgotten): looked for in the schedules of its day and
    /// of the days either side (providers count days in their own zones), and in the live lists.
    func discover(_ id: String) async {
        guard let day = GameIdentity.day(inId: id) else { return }
        for date in [day] + Self.neighbours(of: day) {
            _ = await schedules(of: date)
            if !registry.members(of: id).isEmpty { return }
        }
        _ = await liveMatches()
    }

    /// One entry per game: as it was last served when its polls have begun, else as the best provider lists it.
    private func merge(_ caches: [ListCache]) -> [MatchSnapshot] {
        var seen: Set<String> = []
        var out: [MatchSnapshot] = []
        let shown = served.withLock { $0.games.compactMapValues(\.snapshot) }
        for cache in caches {
            for (id, snapshot) in cache.matches where seen.insert(id).inserted {
                if let served = shown[id] {
                    out.append(served)
                } else {
                    var entry = snapshot
                    entry.id = id
                    entry.seq = nil
                    out.append(entry)
                }
            }
        }
        return out
    }
}
