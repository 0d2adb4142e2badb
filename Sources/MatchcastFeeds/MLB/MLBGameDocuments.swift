import Foundation
import Synchronization

/// The last whole live-feed document of each game an `MLBFeedTransport` serves with diff patches: what the next
/// `diffPatch?startTimecode=` answer is applied to.
final class MLBGameDocuments: Sendable {
    /// The most games held (a document is a few hundred KB); the table starts again when full.
    static let capacity = 64
    private let documents = Mutex<[String: JSONValue]>([:])

    func document(_ gamePk: String) -> JSONValue? {
        documents.withLock { $0[gamePk] }
    }

    func store(_ document: JSONValue, for gamePk: String) {
        documents.withLock { documents in
            if documents[gamePk] == nil, documents.count >= Self.capacity { documents.removeAll(keepingCapacity: true) }
            documents[gamePk] = document
        }
    }

    func forget(_ gamePk: String) {
        _ = documents.withLock { $0.removeValue(forKey: gamePk) }
    }

    /// The feed's `metaData.timeStamp` (`20240701_214404`): what a diff starts from.
    static func timeStamp(of document: JSONValue) -> String? {
        document["metaData"]?["timeStamp"]?.string
    }

    /// `document` brought up to date by a `diffPatch` answer: an array of `{"diff": [operations]}` applied in order
    /// (empty: nothing changed), or a whole document (the feed sends one when the diff would be larger); nil when the
    /// answer is neither or an operation cannot be applied, so that the whole feed is fetched instead.
    static func patched(_ document: JSONValue, with body: Data) -> JSONValue? {
        guard let answer = JSONValue.parse(body) else { return nil }
        switch answer {
        case .object(let members) where members["liveData"] != nil && members["gameData"] != nil:
            return answer
        case .array(let groups):
            var current = document
            for group in groups {
                guard let diff = group["diff"], let patch = JSONPatch(diff), let next = try? patch.applied(to: current) else {
                    return nil
                }
                current = next
            }
            return current
        default:
            return nil
        }
    }
}
