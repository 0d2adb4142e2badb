extension InMemoryStore {
    public func openHolders(updateTokens: [String]) -> [String: String] {
        var holders: [String: String] = [:]
        for token in updateTokens {
            if let holder = activityTable.record(updateToken: token), holder.isOpen { holders[token] = holder.activityId }
        }
        return holders
    }
}
