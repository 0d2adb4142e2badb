extension FeedTransport {
    /// One fetch with every failure but cancellation turned into a `FeedError`, so sources can feed
    /// it to their poll step; cancellation is rethrown because it is not the feed's fault.
    func answer(_ request: FeedRequest, path: String) async throws -> Result<FeedResponse, FeedError> {
        do {
            return .success(try await fetch(request))
        } catch let error as FeedError {
            return .failure(error)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return .failure(.transport(error, path: path))
        }
    }
}
