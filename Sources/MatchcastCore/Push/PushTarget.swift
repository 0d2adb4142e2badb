/// Where one delivery goes: an activity's update token, a device's push-to-start token, or a broadcast channel.
public struct PushTarget: Sendable, Hashable, Codable {
    /// The kind of address.
    public enum Kind: String, Sendable, Hashable, Codable {
        case updateToken
        case pushToStartToken
        case channel
    }

    public var kind: Kind
    /// A hex token or a channel id.
    public var value: String

    public init(kind: Kind, value: String) {
        self.kind = kind
        self.value = value
    }

    /// The value with all but its first and last four characters hidden, for logs.
    public var redacted: String { Redact.token(value) }
}

/// Hides secrets in logs: tokens and keys never appear whole.
public enum Redact {
    /// `"80a1…9f3c"` for a long token; short values are hidden entirely.
    public static func token(_ value: String) -> String {
        value.count <= 12 ? "…" : "\(value.prefix(4))…\(value.suffix(4))"
    }
}
