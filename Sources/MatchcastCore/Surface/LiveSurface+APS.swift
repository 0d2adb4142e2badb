extension LiveSurface {
    /// The surface of one ActivityKit push: its event, content-state, dates, and its attributes on a `start`.
    ///
    /// - Parameter attributes: the activity's attributes as kept from its `start`, for the pushes that do not
    ///   carry them; the push's own win.
    public init(aps: APS, matchId: String, attributes: ActivityAttributes? = nil, sport: Sport? = nil, deepLink: String? = nil) {
        self.init(
            matchId: matchId, event: aps.event, contentState: aps.contentState, attributes: aps.attributes ?? attributes,
            sport: sport, isKeyMoment: aps.alert != nil, timestamp: aps.timestamp, staleDate: aps.staleDate,
            dismissalDate: aps.dismissalDate, deepLink: deepLink)
    }

    /// The surface of a delivery: its match and its payload's `aps`.
    public init(delivery: Delivery, attributes: ActivityAttributes? = nil, sport: Sport? = nil, deepLink: String? = nil) {
        self.init(aps: delivery.payload.aps, matchId: delivery.matchId, attributes: attributes, sport: sport, deepLink: deepLink)
    }
}
