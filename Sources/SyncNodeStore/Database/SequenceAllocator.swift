import GRDB
import Synchronization

/// Hands out collection sequence numbers inside a write transaction: the
/// counter row is read at a collection's first change in the transaction and
/// written back once before commit, instead of an UPDATE per document.
/// The transaction holds SQLite's write lock, so no other connection or
/// process can interleave.
///
/// The same row holds the collection's ``DigestLog``, which every write that takes a sequence
/// changes too: it is read and written with the counter, so that a single save reads and
/// writes the row once.
final class SequenceAllocator: Sendable {
    /// Per collection: the counter row as this transaction found it, and the last sequence handed out.
    private let counters = Mutex<[Int64: Counter]>([:])
    private let transactions = Atomic(0)

    /// The sequences one transaction took in a collection: `before + 1 ... last`.
    struct Allocated: Equatable {
        let before: Int64
        var last: Int64
    }

    private struct Counter {
        var allocated: Allocated
        /// The row's `digest_log` when the transaction first took a sequence (empty for NULL).
        let digestLog: [UInt8]
        /// The `digest_log` to write back with the counter (empty for NULL); nil: left as it is.
        var newDigestLog: [UInt8]?
    }

    /// Forgets counters from an earlier transaction (committed or rolled back).
    func beginTransaction() {
        counters.withLock { $0.removeAll(keepingCapacity: true) }
        transactions.add(1, ordering: .relaxed)
    }

    /// Numbers the write transactions of this database in this process.
    var transaction: Int { transactions.load(ordering: .relaxed) }

    /// The last sequence the current transaction took in a collection; nil before its first.
    func last(collectionID: Int64) -> Int64? {
        counters.withLock { $0[collectionID]?.allocated.last }
    }

    /// The collection's stored digest log, as read with its counter; nil if this transaction
    /// took no sequence in it.
    func digestLog(collectionID: Int64) -> [UInt8]? {
        counters.withLock { $0[collectionID]?.digestLog }
    }

    /// Writes `log` (empty for NULL) as the collection's digest log with its counter; the
    /// transaction must have taken a sequence in it.
    func setDigestLog(_ log: [UInt8], collectionID: Int64) {
        counters.withLock { $0[collectionID]?.newDigestLog = log }
    }

    func next(_ db: GRDB.Database, collectionID: Int64) throws -> Int64 {
        if let next = counters.withLock({ c -> Int64? in
            guard c[collectionID] != nil else { return nil }
            c[collectionID]?.allocated.last += 1
            return c[collectionID]?.allocated.last
        }) {
            return next
        }
        // Raw cached statements here and in flush: through GRDB's uncached SQL and argument
        // arrays, these two were a third of a single save's time in the store (perf).
        let read = try SQLiteStatement.cached(db, "SELECT last_seq, digest_log FROM collections WHERE id = ?")
        defer { read.reset() }
        read.bind(1, collectionID)
        guard try read.step() else { throw StoreError.notFound(.collection, "collection #\(collectionID)") }
        let last = read.int64(0)
        let log = read.withBlob(1) { Array($0) }
        counters.withLock { $0[collectionID] = Counter(allocated: Allocated(before: last, last: last + 1), digestLog: log) }
        return last + 1
    }

    /// Hands back `sequence`, the last one taken, unused: the write it was for wrote nothing.
    func giveBack(_ sequence: Int64, collectionID: Int64) {
        counters.withLock { c in
            if c[collectionID]?.allocated.last == sequence { c[collectionID]?.allocated.last -= 1 }
        }
    }

    /// Writes the counters back, with the digest logs set since they were read; call last in
    /// the transaction. Returns what it took.
    @discardableResult
    func flush(_ db: GRDB.Database) throws -> [Int64: Allocated] {
        let dirty = counters.withLock { c in
            defer { c.removeAll(keepingCapacity: true) }
            return c
        }
        for (collectionID, counter) in dirty {
            let allocated = counter.allocated, log = counter.newDigestLog
            let update = try SQLiteStatement.cached(db, log == nil
                ? "UPDATE collections SET last_seq = ?2 WHERE id = ?1"
                : "UPDATE collections SET last_seq = ?2, digest_log = ?3 WHERE id = ?1")
            defer { update.reset() }
            update.bind(1, collectionID)
            update.bind(2, allocated.last)
            if let log, !log.isEmpty {
                try log.withUnsafeBytes { try update.stepOnce(bindingInPlace: $0, at: 3) }
            } else {
                if log != nil { update.bindNull(3) }
                _ = try update.step()
            }
        }
        return dirty.mapValues(\.allocated)
    }
}
