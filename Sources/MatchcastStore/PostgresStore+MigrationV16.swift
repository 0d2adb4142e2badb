import Foundation

// Schema v16: the relay's removal (`matchcast_unqueue`) looks at as many queued chunks as it still has ids to find,
// not at up to 4,096.
//
// Each page of `matchcast_unqueue` is the run of chunks from the head of the queue that holds as many entries as are
// still wanted. To find where that run ends it summed the entries of a window of up to 4,096 chunks: the whole queue,
// whatever it held. So each removal of what the relay sent read every queued chunk, and PostgreSQL, expecting to read
// them all, scanned the table and sorted it rather than walking its primary key from the head: with many matches
// changing at once, a table of a few hundred live chunks and thousands of dead ones was scanned a few dozen times a
// second (docs/performance.md, "A removal read the whole queue").
//
// - A chunk holds at least one entry (an emptied chunk is deleted; a chunk is written with at least one), so the run
//   that holds `wanted - found` entries is at most that many chunks: the window is now `least(4096, wanted - found)`
//   chunks, and a removal of k ids reads about k chunks from the head. Which chunks a page takes is unchanged.
// - Only replaces the function, with the same signature: a replica of the build before runs beside it.

extension PostgresStore {
    static let v16 = Migration(name: "v16", statements: [
        unqueueFunction(create: "CREATE OR REPLACE FUNCTION", window: "least(4096, wanted - found)"),
    ], readers: .any)
}
