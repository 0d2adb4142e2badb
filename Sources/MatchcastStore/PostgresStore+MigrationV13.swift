import Foundation

// Schema v13: a queued chunk's arrays are compressed with lz4, all but its tokens.
//
// v7 stored `outbox_chunk`'s arrays as they are (`STORAGE EXTERNAL`): PostgreSQL's own compressor, pglz, costs more
// CPU than the bytes it saves are worth. Those arrays are most of what a fan-out writes: per delivery, its id, activity,
// event, target and payload number, written once when the chunk is queued and deleted when it is sent, all of it
// through the write-ahead log (docs/performance.md has the figures). lz4 is cheap enough to run on every chunk; what it
// takes out is the ids' shared prefixes (a fan-out's delivery ids are made in the same millisecond), the repeated
// events and target kinds, the payload numbers and, in a kick-off's chunk, the starts' payloads, which differ only in
// their activity id. `target_values` stays as it is: a token's digits are random, so compressing them costs a chunk's
// save, and every partial removal that rewrites the chunk, CPU for nothing.
//
// A server built without lz4 (`default_toast_compression` does not list it) keeps the arrays as they are: the
// statement is refused there as a whole, and the block goes on without it.
//
// Only adds for an older build: compression is the server's, a reader gets the same arrays back. Rows queued before
// stay as they were written and are read as before.

extension PostgresStore {
    static let v13 = Migration(name: "v13", statements: [
        """
        DO $compress$
        BEGIN
            EXECUTE 'ALTER TABLE outbox_chunk
                ALTER COLUMN payloads SET COMPRESSION lz4, ALTER COLUMN payloads SET STORAGE EXTENDED,
                ALTER COLUMN delivery_ids SET COMPRESSION lz4, ALTER COLUMN delivery_ids SET STORAGE EXTENDED,
                ALTER COLUMN activity_ids SET COMPRESSION lz4, ALTER COLUMN activity_ids SET STORAGE EXTENDED,
                ALTER COLUMN events SET COMPRESSION lz4, ALTER COLUMN events SET STORAGE EXTENDED,
                ALTER COLUMN target_kinds SET COMPRESSION lz4, ALTER COLUMN target_kinds SET STORAGE EXTENDED,
                ALTER COLUMN payload_refs SET COMPRESSION lz4, ALTER COLUMN payload_refs SET STORAGE EXTENDED';
        EXCEPTION WHEN feature_not_supported OR syntax_error THEN
            NULL;
        END
        $compress$
        """,
    ], readers: .any)
}
