import GRDB
import Synchronization

/// A collection's digest as last read, with the collection's `last_seq` when it was true.
///
/// Reading the digest whole (its table and log, then the root's hash) takes 0.3-0.7 ms, and a
/// mesh reads the same one many times per write: each peer's sync check asks for it, and so does
/// this node's check of each peer. Every write that changes a digest takes a sequence (saves,
/// replicated revisions, purges, expiry), so while `last_seq` stays the same the digest does too:
/// one row read instead. `last_seq` is read from the file, so another process's writes count.
final class DigestMemo: Sendable {
    private let last = Mutex<(lastSequence: Int64, digest: CollectionDigest)?>(nil)

    /// The collection's digest in `db`'s snapshot, whose `last_seq` is `lastSequence` (nil: read
    /// whole and not remembered, as inside a write transaction, where the counter row lags the
    /// rows until the commit).
    func digest(_ db: GRDB.Database, _ tables: CollectionTables, lastSequence: Int64?) throws -> CollectionDigest {
        guard let lastSequence else { return try DigestTable.read(db, tables) }
        // Read under the lock: right after a write, the long polls of every peer ask at once,
        // and all but the first wait for its read instead of each reading the digest whole.
        return try last.withLock { last in
            if let last, last.lastSequence == lastSequence { return last.digest }
            let digest = try DigestTable.read(db, tables)
            last = (lastSequence, digest)
            return digest
        }
    }
}
