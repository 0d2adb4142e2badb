/// A live surface whose rendering does not fit its platform's limit even after the shortening rule:
/// what is left is the match id, the event and the dates, so the match id is too long.
public struct SurfaceTooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rendering that did not fit.
    public enum Format: String, Sendable, Hashable {
        case fcm
        case webPush
    }

    public let format: Format
    /// Its size after the last shortening step.
    public let bytes: Int
    public let limit: Int

    public var description: String {
        "\(format == .fcm ? "FCM data" : "Web Push payload") is \(bytes) bytes after shortening, over \(limit)"
    }
}
