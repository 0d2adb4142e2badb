extension LiveSurface {
    /// Steps of the shortening rule after the surface as it is; see `shortened(step:)`.
    static let shorteningSteps = 6

    /// The surface with shortening step `step` (1...`shorteningSteps`) and every earlier one applied.
    ///
    /// The rule, the same for FCM and Web Push (docs/formats.md, "Live surface"): least important first,
    /// 1. drop `subtitle` (the competition; the status text has its own field);
    /// 2. drop the progress points (the bar still shows);
    /// 3. drop `deepLink` (a cut link is a broken one; the app opens the match by id);
    /// 4. cut `keyEvent` and `result` to 80 characters;
    /// 5. cut `title`, `scoreLine`, `status`, `statusText`, `keyEvent` and `result` to 24 characters;
    /// 6. drop `progress`.
    /// Characters are Unicode scalars, and each cut ends in "…", as in `PushPayload`. The match id, the event
    /// and the dates are never touched: what still does not fit is an error.
    func shortened(step: Int) -> LiveSurface {
        var surface = self
        if step >= 1 { surface.subtitle = nil }
        if step >= 2 { surface.progress?.dropPoints() }
        if step >= 3 { surface.deepLink = nil }
        if step >= 4 {
            surface.keyEvent = surface.keyEvent.map { PushPayload.cut($0, 80) }
            surface.result = surface.result.map { PushPayload.cut($0, 80) }
        }
        if step >= 5 {
            surface.title = PushPayload.cut(surface.title, 24)
            surface.scoreLine = PushPayload.cut(surface.scoreLine, 24)
            surface.status = PushPayload.cut(surface.status, 24)
            surface.statusText = PushPayload.cut(surface.statusText, 24)
            surface.keyEvent = surface.keyEvent.map { PushPayload.cut($0, 24) }
            surface.result = surface.result.map { PushPayload.cut($0, 24) }
        }
        if step >= 6 { surface.progress = nil }
        return surface
    }

    /// The first rendering, shortening step by step, whose size fits `limit`, and whether it was shortened.
    func fitting<Rendering>(
        _ format: SurfaceTooLarge.Format, limit: Int, render: (LiveSurface) -> (rendering: Rendering, bytes: Int)
    ) throws(SurfaceTooLarge) -> (rendering: Rendering, shortened: Bool) {
        var bytes = 0
        for step in 0...Self.shorteningSteps {
            let candidate = render(shortened(step: step))
            if candidate.bytes <= limit { return (candidate.rendering, step > 0) }
            bytes = candidate.bytes
        }
        throw SurfaceTooLarge(format: format, bytes: bytes, limit: limit)
    }
}
