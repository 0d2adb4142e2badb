/// Whether a caller waits, on the current task, for the store's writes to commit: an API request (the HTTP layer sets
/// it around each request). A small write of polling or delivery that finds the store busy of late waits a moment for
/// others to commit with it (`SQLiteWriteQueue`, `PostgresWriteGroup`): many matches changing at once then share
/// their commits. A write a caller waits for commits at once, so that a request's consecutive writes (a follow's, then
/// its activity's start) do not each wait for company that is not coming.
public enum StoreWrites {
    @TaskLocal public static var callerWaits = false
}
