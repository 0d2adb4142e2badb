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

    @Test func countsABatchWhoseIdsComeNextInOrder() throws {
        let data = try Self.entries.encoded()
        let ids = Self.entries.entries.map(\.deliveryId)
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: ids, at: 0) == 40)
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: ["before"] + ids + ["after"], at: 1) == 40)
        // One id out of place, one missing at the end, the list read from the wrong place: not this batch.
        var swapped = ids
        swapped.swapAt(20, 21)
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: swapped, at: 0) == nil)
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: Array(ids.dropLast()), at: 0) == nil)
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: ids, at: 1) == nil)
        // The same text but one byte longer or shorter is another id.
        var longer = ids
        longer[39] += "x"
        #expect(OutboxBatchEntries.count(decoding: data, idsFrom: longer, at: 0) == nil)
        #expect(OutboxBatchEntries.count(decoding: Data(), idsFrom: ids, at: 0) == 0)
    }

    @Test func aDamagedBlobIsRefusedByBothReaders() throws {
        let data = try Self.entries.encoded()
        // Cut inside a field, on a field boundary mid-delivery, and one byte into a length.
        let firstDelivery = 10 + "dlv-0-é".utf8.count + "act-0".utf8.count + "start".utf8.count + "pushToStartToken".utf8.count
        for cut in [7, 2 + "dlv-0-é".utf8.count, firstDelivery + 1] {
            let damaged = data.prefix(cut)
            #expect(OutboxBatchEntries.deliveryIds(decoding: damaged) == nil, "cut at \(cut)")
            #expect(OutboxBatchEntries.count(decoding: damaged, idsFrom: Self.entries.entries.map(\.deliveryId), at: 0) == nil)
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
