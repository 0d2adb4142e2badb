import MatchcastStore

/// What a batch of update-token registrations has done so far, over what the store said before it: who holds each
/// token and which activities changed. A registration checked against it sees the earlier ones of its batch, as if
/// each had been saved before the next began (their records are saved together at the end).
struct TokenBatch {
    /// Token → the open activity holding it, as the store said before the batch.
    private let stored: [String: String]
    /// Token → the activity of the batch that took it last.
    private var claimed: [String: String] = [:]
    /// Activity id → its version after the batch's changes so far.
    private var latest: [String: ActivityRecord] = [:]

    init(stored: [String: String]) {
        self.stored = stored
    }

    /// The open activity holding `token` now, if any.
    func holder(of token: String) -> String? {
        for id in [claimed[token], stored[token]].compactMap({ $0 }) {
            // An activity the batch has not touched holds what the store says.
            guard let now = latest[id] else { return id }
            if now.isOpen, now.updateToken == token { return id }
        }
        return nil
    }

    /// The activity as the batch changed it (nil when the batch has not touched it).
    func changed(_ activityId: String) -> ActivityRecord? { latest[activityId] }

    /// Takes in records a registration of the batch changed.
    mutating func note(_ records: [ActivityRecord]) {
        for record in records {
            latest[record.activityId] = record
            if record.isOpen, let token = record.updateToken { claimed[token] = record.activityId }
        }
    }
}
