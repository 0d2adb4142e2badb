import Foundation
import MatchcastCore
@testable import MatchcastStore
import Testing

/// The blob an outbox batch row keeps its deliveries in: written, read back whole, and read for its ids alone.
@Suite("outbox batch entries: the stored blob")
struct OutboxBatchEntriesTests {
    static let entries = OutboxBatchEntries((0..<40).map { index in
        OutboxBatchEntries.Entry(
            deliveryId: "dlv-\(index)-é", activityId: "act-\(index)", event: index.isMultiple(of: 3) ? "start" : "update",
            targetKind: index.isMultiple(of: 3) ? "pushToStartToken" : "updateToken",
            // The first one empty; the 33rd 64 hex digits, kept (and written) as its 32 bytes.
            targetValue: CompactToken(String(repeating: "ab", count: index)))
    })

    @Test func roundTripsAndGivesItsIdsAlone() throws {
        let data = try Self.entries.encoded()
        #expect(try OutboxBatchEntries(decoding: data, row: 1) == Self.entries)
        #expect(OutboxBatchEntries.deliveryIds(decoding: data) == Self.entries.entries.map(\.deliveryId))
        #expect(Self.entries.entries[32].targetValue.string == String(repeating: "ab", count: 32))
        #expect(data.range(of: Data(String(repeating: "ab", count: 32).utf8)) != nil, "the digits are written as text")
        #expect(OutboxBatchEntries.deliveryIds(decoding: Data()) == [])
    }

    @Test func aDamagedBlobIsRefusedByBothReaders() throws {
        let data = try Self.entries.encoded()
        // Cut inside a field, on a field boundary mid-delivery, and one byte into a length.
        let firstDelivery = 10 + "dlv-0-é".utf8.count + "act-0".utf8.count + "start".utf8.count + "pushToStartToken".utf8.count
        for cut in [7, 2 + "dlv-0-é".utf8.count, firstDelivery + 1] {
            let damaged = data.prefix(cut)
            #expect(OutboxBatchEntries.deliveryIds(decoding: damaged) == nil, "cut at \(cut)")
            #expect(throws: StoreError.corrupt) { try OutboxBatchEntries(decoding: damaged, row: 9) }
        }
    }

    @Test func aFieldTooLongForItsLengthIsInvalid() {
        let long = OutboxBatchEntries([.init(
            deliveryId: "d", activityId: "a", event: "update", targetKind: "updateToken",
            targetValue: CompactToken(String(repeating: "x", count: OutboxBatchEntries.maxFieldBytes + 1)))])
        #expect(throws: StoreError.invalid) { try long.encoded() }
    }
}
