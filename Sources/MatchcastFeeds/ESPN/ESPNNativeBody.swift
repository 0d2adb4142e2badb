import Foundation
import MatchcastCore

/// The native v1 bodies `ESPNFeedTransport` answers with: `NativeFeedBody`'s shapes plus
/// `skipped`, the events that could not be served and why (left out when there are none; clients
/// ignore the key).
enum ESPNNativeBody {
    struct Skipped: Encodable, Hashable {
        /// `espn:<event id>`, or nil when not even the id could be read.
        var id: String?
        var error: String
    }

    /// `GET /live-matches`.
    struct LiveMatches: Encodable {
        var retryAfterMs: Int
        var generatedAt: Date
        var matches: [MatchSnapshot]
        var skipped: [Skipped]?
    }

    /// `GET /schedule?date=YYYY-MM-DD`.
    struct Schedule: Encodable {
        var date: String
        var matches: [MatchSnapshot]
        var skipped: [Skipped]?
    }

    static func skipped(_ events: [ESPNConvertedEvent]) -> [Skipped]? {
        let failed = events.compactMap { event -> Skipped? in
            guard case .failure(let error) = event.result else { return nil }
            return Skipped(id: event.eventId.map { "espn:\($0)" }, error: error.description)
        }
        return failed.isEmpty ? nil : failed
    }
}
