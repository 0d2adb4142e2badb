import CoreMetrics

/// A metrics factory that adds `app="<id>"` to every metric it makes: one app's sink, built with it, counts its
/// deliveries and its push service's answers apart from the other apps' (`matchcast_deliveries_total{sink, outcome,
/// app}`) with no change to the sink.
public struct AppMetricsFactory: MetricsFactory {
    public let base: any MetricsFactory
    public let appId: String

    public init(base: any MetricsFactory, appId: String) {
        self.base = base
        self.appId = appId
    }

    private func labelled(_ dimensions: [(String, String)]) -> [(String, String)] { dimensions + [("app", appId)] }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        base.makeCounter(label: label, dimensions: labelled(dimensions))
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: label, dimensions: labelled(dimensions))
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: labelled(dimensions))
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: label, dimensions: labelled(dimensions), aggregate: aggregate)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        base.makeTimer(label: label, dimensions: labelled(dimensions))
    }

    public func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
