import Hummingbird
import NIOCore

/// A Hummingbird request context that keeps the connection's channel, so a fake server can drop the connection
/// mid-answer (`WebhookReceiver`'s `Fault.down`, `FakePushService`'s `Answer.drop`).
struct ChannelRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}
