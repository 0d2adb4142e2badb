/// The sports a feed may report (docs/formats.md, "Feed (native v1)").
public enum Sport: String, Sendable, Hashable, Codable, CaseIterable {
    case cricket
    case tennis
    case football
    case basketball
    case baseball
    case hockey
    case americanFootball

    /// Sports whose score is two totals with a period and a clock.
    public var isTeamTotals: Bool {
        switch self {
        case .football, .basketball, .hockey, .americanFootball: true
        case .cricket, .tennis, .baseball: false
        }
    }
}
