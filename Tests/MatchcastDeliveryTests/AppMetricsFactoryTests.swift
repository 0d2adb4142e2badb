import CoreMetrics
import MatchcastDelivery
import MatchcastTesting
import Synchronization
import Testing

/// A factory noting each handler it is asked to make (kind, label, dimensions) and each it is told to destroy.
private final class NotingFactory: MetricsFactory, Sendable {
    struct Made: Hashable, Sendable {
        var kind: String
        var label: String
        var dimensions: [String]
    }

    private let state = Mutex<(made: [Made], destroyed: [String])>(([], []))

    var made: [Made] { state.withLock { $0.made } }
    var destroyed: [String] { state.withLock { $0.destroyed } }

    private func note(_ kind: String, _ label: String, _ dimensions: [(String, String)]) {
        state.withLock { $0.made.append(Made(kind: kind, label: label, dimensions: dimensions.map { "\($0.0)=\($0.1)" })) }
    }

    private func noteDestroyed(_ kind: String) { state.withLock { $0.destroyed.append(kind) } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        note("counter", label, dimensions)
        return NOOPMetricsHandler.instance
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        note("floatingPointCounter", label, dimensions)
        return NOOPMetricsHandler.instance
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        note("meter", label, dimensions)
        return NOOPMetricsHandler.instance
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        note(aggregate ? "recorder(aggregate)" : "recorder", label, dimensions)
        return NOOPMetricsHandler.instance
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        note("timer", label, dimensions)
        return NOOPMetricsHandler.instance
    }

    func destroyCounter(_ handler: any CounterHandler) { noteDestroyed("counter") }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { noteDestroyed("floatingPointCounter") }
    func destroyMeter(_ handler: any MeterHandler) { noteDestroyed("meter") }
    func destroyRecorder(_ handler: any RecorderHandler) { noteDestroyed("recorder") }
    func destroyTimer(_ handler: any TimerHandler) { noteDestroyed("timer") }
}

/// The metrics factory of one app's sink: every metric it makes is its base's with `app=<id>` added after the
/// sink's own dimensions (none taken away), destroying goes to the base, and two apps' sinks over one base count apart.
@Suite("Apps: metrics labelled with the app")
struct AppMetricsFactoryTests {
    @Test("every kind of metric gets app=<id> after its own dimensions; destroying reaches the base")
    func everyKind() {
        let base = NotingFactory()
        let factory = AppMetricsFactory(base: base, appId: "fantasy")
        let dimensions = [("sink", "apns"), ("outcome", "delivered")]
        let counter = factory.makeCounter(label: "c", dimensions: dimensions)
        let floating = factory.makeFloatingPointCounter(label: "fc", dimensions: dimensions)
        let meter = factory.makeMeter(label: "m", dimensions: [])
        let recorder = factory.makeRecorder(label: "r", dimensions: dimensions, aggregate: true)
        let plainRecorder = factory.makeRecorder(label: "r2", dimensions: dimensions, aggregate: false)
        let timer = factory.makeTimer(label: "t", dimensions: [("sink", "fcm")])
        #expect(base.made == [
            .init(kind: "counter", label: "c", dimensions: ["sink=apns", "outcome=delivered", "app=fantasy"]),
            .init(kind: "floatingPointCounter", label: "fc", dimensions: ["sink=apns", "outcome=delivered", "app=fantasy"]),
            .init(kind: "meter", label: "m", dimensions: ["app=fantasy"]),
            .init(kind: "recorder(aggregate)", label: "r", dimensions: ["sink=apns", "outcome=delivered", "app=fantasy"]),
            .init(kind: "recorder", label: "r2", dimensions: ["sink=apns", "outcome=delivered", "app=fantasy"]),
            .init(kind: "timer", label: "t", dimensions: ["sink=fcm", "app=fantasy"]),
        ])
        factory.destroyCounter(counter)
        factory.destroyFloatingPointCounter(floating)
        factory.destroyMeter(meter)
        factory.destroyRecorder(recorder)
        factory.destroyRecorder(plainRecorder)
        factory.destroyTimer(timer)
        #expect(base.destroyed == ["counter", "floatingPointCounter", "meter", "recorder", "recorder", "timer"])
    }

    @Test("two apps' sinks counting through one base are told apart by app; nothing is counted without it")
    func countedApart() {
        let base = RecordingMetrics()
        let fantasy = AppMetricsFactory(base: base, appId: "fantasy")
        let kids = AppMetricsFactory(base: base, appId: "kids")
        let dimensions = [("sink", "fcm"), ("outcome", "delivered")]
        Counter(label: "matchcast_deliveries_total", dimensions: dimensions, factory: fantasy).increment(by: 3)
        Counter(label: "matchcast_deliveries_total", dimensions: dimensions, factory: kids).increment(by: 2)
        Counter(label: "matchcast_deliveries_total", dimensions: dimensions, factory: fantasy).increment()
        #expect(base.counter("matchcast_deliveries_total", dimensions + [("app", "fantasy")]) == 4)
        #expect(base.counter("matchcast_deliveries_total", dimensions + [("app", "kids")]) == 2)
        #expect(base.counter("matchcast_deliveries_total", dimensions) == 0, "never without the app")
        #expect(fantasy.appId == "fantasy")
    }
}
