import Foundation
import Logging
import MatchcastCore

extension FCMSink {
    /// A delivery and its place in the batch, so what is handed back keeps batch order.
    struct Placed: Sendable {
        var delivery: Delivery
        var index: Int
    }

    /// One send: its body, and the deliveries its answer settles.
    struct Message: Sendable {
        var body: [UInt8]
        var deliveries: [Placed]
    }

    /// The messages of one registration token and one match, in batch order.
    struct Queue: Sendable {
        var token: String
        var matchId: String
        var messages: [Message]
    }

    /// Turns the batch into queues (of this sink's deliveries: `FCMSinkConfiguration.Recipient`), remembering each `start`'s attributes on the way (so an update later in the same
    /// batch has them). A delivery whose surface does not fit FCM is dead-lettered here.
    func prepare(_ batch: [Delivery]) async -> [Queue] {
        var queues: [Queue] = []
        var position: [String: Int] = [:]
        var rendered: [ObjectIdentifier: Result<FCMDataMessage, SurfaceTooLarge>] = [:]
        var tooLarge: [(Delivery, SurfaceTooLarge)] = []
        let sentAt = now()
        for (index, delivery) in batch.enumerated() {
            guard let token = configuration.recipient.token(for: delivery) else { continue }
            let aps = delivery.payload.aps
            if let carried = aps.attributes, attributes.value(for: delivery.matchId) != carried {
                attributes.set(carried, for: delivery.matchId)
                // Surfaces already made for this match's updates lack them: make them again.
                rendered.removeAll()
            }
            // The deliveries of one update share their payload: one surface for all of them.
            let message: Result<FCMDataMessage, SurfaceTooLarge>
            if let known = rendered[delivery.commonIdentity] {
                message = known
            } else {
                let surface = LiveSurface(
                    delivery: delivery, attributes: attributes.value(for: delivery.matchId),
                    deepLink: configuration.deepLink?.link(matchId: delivery.matchId))
                message = Result { () throws(SurfaceTooLarge) in try surface.fcmMessage(now: sentAt) }
                rendered[delivery.commonIdentity] = message
            }
            switch message {
            case .failure(let error):
                tooLarge.append((delivery, error))
            case .success(let fcm):
                let body = FCMSendRequest.body(token: token, message: fcm)
                let key = token + "\u{0}" + delivery.matchId
                let placed = Placed(delivery: delivery, index: index)
                if let at = position[key] {
                    if queues[at].messages[queues[at].messages.count - 1].body == body {
                        queues[at].messages[queues[at].messages.count - 1].deliveries.append(placed)
                    } else {
                        queues[at].messages.append(Message(body: body, deliveries: [placed]))
                    }
                } else {
                    position[key] = queues.count
                    queues.append(Queue(token: token, matchId: delivery.matchId, messages: [Message(body: body, deliveries: [placed])]))
                }
            }
        }
        for (delivery, error) in tooLarge {
            await deadLetters.record([delivery], status: 0, body: "not sent: \(error)")
            logger.warning("live surface too large for FCM; dead-lettered", metadata: [
                "delivery.id": "\(delivery.id)", "fcm.bytes": "\(error.bytes)",
            ])
        }
        metrics.deliveries(outcome: "dead_letter", count: tooLarge.count)
        return queues
    }
}
