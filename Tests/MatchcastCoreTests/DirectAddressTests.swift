import MatchcastCore
import Testing

@Suite("direct address: an Android or web device's, kept as a push-to-start token")
struct DirectAddressTests {
    static let subscription = #"{"endpoint":"https://push.example.com:8443/wpush/v2/secret-path","keys":{"auth":"x","p256dh":"y"}}"#

    @Test("stored and read back; an activity's token names its address and no hex token is taken for one")
    func roundTrips() {
        for address in [DirectAddress.fcm("fK3:APA91b_x-y.z"), .webPush(Self.subscription)] {
            #expect(DirectAddress(stored: address.stored) == address)
            let token = address.activityToken(for: "act_01ABC")
            #expect(DirectAddress(activityToken: token) == address)
            #expect(address.holds(activityToken: token) && DirectAddress.isDirect(token))
        }
        #expect(DirectAddress.fcm("a").target == PushTarget(kind: .fcmToken, value: "a"))
        #expect(DirectAddress.webPush(Self.subscription).target == PushTarget(kind: .webPushSubscription, value: Self.subscription))
        // Hex tokens, including those starting with f, are APNs's.
        for hex in [String(repeating: "f0", count: 32), String(repeating: "ab", count: 32), "fc" + String(repeating: "00", count: 31)] {
            #expect(!DirectAddress.isDirect(hex) && DirectAddress(stored: hex) == nil && DirectAddress(activityToken: hex) == nil)
        }
        #expect(!DirectAddress.fcm("a").holds(activityToken: DirectAddress.fcm("b").activityToken(for: "act_1")))
    }

    @Test("redacted: an FCM token cut to its ends, a subscription to its push service's origin, never its path")
    func redacted() {
        let fcm = DirectAddress.fcm("fK3cR9wT0e4:APA91bHsecretsecret").redacted
        #expect(fcm == "fcm:fK3c…cret")
        let web = DirectAddress.webPush(Self.subscription).redacted
        #expect(web == "webpush:https://push.example.com:8443/…")
        #expect(!web.contains("secret-path"))
        #expect(DirectAddress.webPush("not json").redacted == "webpush:…")
    }
}
