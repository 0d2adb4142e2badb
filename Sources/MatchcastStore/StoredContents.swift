import MatchcastCore

/// The contents a batch of activity records refers to (what each shows, holds, or holds for its end), each distinct
/// one encoded once: a fan-out's 100,000 records share one or two contents, so the SQL stores write one
/// content-state row per distinct content and per activity only its id.
///
/// Contents are told apart by box (the records of one update share the update's box) and match; two boxes with
/// equal contents encode to the same text, which the stores' content tables keep once.
struct StoredContents {
    /// One distinct content: its match and its JSON text (Matchcast's deterministic encoder).
    struct Entry {
        var matchId: String
        var text: String
    }

    /// A record's three contents, as indexes into `entries` (-1: none).
    struct Refs {
        var sent: Int32
        var held: Int32
        var final: Int32
    }

    private(set) var entries: [Entry] = []
    /// By record, in the order given.
    private(set) var refs: [Refs] = []
    /// Each record's stored lifecycle, in the order given.
    private(set) var stored: [ActivityLifecycle.Stored] = []

    private struct Key: Hashable {
        var box: ObjectIdentifier
        var matchId: String
    }

    private var index: [Key: Int32] = [:]
    /// The box found last, and where: consecutive records almost always share it.
    private var lastBox: ContentBox?
    private var lastMatch = ""
    private var lastIndex: Int32 = -1

    /// Validates and takes apart `records`; encodes each distinct content.
    init(_ records: [ActivityRecord]) throws(StoreError) {
        refs.reserveCapacity(records.count)
        stored.reserveCapacity(records.count)
        for position in records.indices {
            try records[position].validate()
            let lifecycle = records[position].lifecycle.stored
            let matchId = records[position].matchId
            refs.append(Refs(
                sent: try entry(lifecycle.sent, matchId),
                held: try entry(lifecycle.held, matchId),
                final: try entry(lifecycle.final, matchId)))
            stored.append(lifecycle)
        }
    }

    /// The index of `box`'s content of `matchId` in `entries` (-1: none), added when it is new.
    mutating func entry(_ box: ContentBox?, _ matchId: String) throws(StoreError) -> Int32 {
        guard let box else { return -1 }
        if box === lastBox, matchId == lastMatch { return lastIndex }
        let key = Key(box: ObjectIdentifier(box), matchId: matchId)
        let found: Int32
        if let known = index[key] {
            found = known
        } else {
            found = Int32(entries.count)
            entries.append(Entry(matchId: matchId, text: try JSONColumn.encode(box.value, "content of match '\(matchId)'")))
            index[key] = found
        }
        lastBox = box
        lastMatch = matchId
        lastIndex = found
        return found
    }
}

/// Content-state rows read back, each decoded once and shared by every activity that refers to it.
struct LoadedContents {
    private var boxes: [Int64: ContentBox] = [:]

    init() {}

    mutating func add(id: Int64, text: String) throws(StoreError) {
        boxes[id] = ContentBox(try JSONColumn.decode(ContentState.self, from: text, "content-state \(id)"))
    }

    /// The content with this id; `.corrupt` when a record refers to one that is not there.
    func box(_ id: Int64?, of activityId: String) throws(StoreError) -> ContentBox? {
        guard let id else { return nil }
        guard let box = boxes[id] else { throw .corrupt("stored activity '\(activityId)' refers to missing content-state \(id)") }
        return box
    }
}
