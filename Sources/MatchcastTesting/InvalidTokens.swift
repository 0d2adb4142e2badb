/// What the sink reported through `onInvalidToken`, in order.
public actor InvalidTokens {
    public private(set) var reports: [(token: String, reason: String)] = []

    public init() {}

    public func record(_ token: String, _ reason: String) {
        reports.append((token, reason))
    }

    public var tokens: [String] { reports.map(\.token) }
}
