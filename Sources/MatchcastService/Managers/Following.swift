import Foundation
import MatchcastStore

/// What a follow answers with: the device's open activity for the match, and when the device first followed it.
public struct Following: Sendable {
    public let activity: ActivityRecord
    public let followedAt: Date
}
