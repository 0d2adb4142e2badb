/// What every poll step's outcome can say, whatever else it says: the match, list and schedule steps share their
/// handling of 304s and failures (`PollPacer.notModified`, `PollPacer.failure`) through it.
public protocol PollOutcome: Sendable {
    /// A 304, or an answer that changes nothing held.
    static var unchanged: Self { get }
    /// No usable answer; what is cached is kept.
    static func failed(_ error: FeedError) -> Self
}

extension MatchPollOutcome: PollOutcome {}
extension LiveListPollOutcome: PollOutcome {}
extension SchedulePollOutcome: PollOutcome {}
