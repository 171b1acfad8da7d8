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
    /// Per collection: the counter row as this transaction found it, and the last sequence
    /// handed out. Kept from one transaction to the next for their digest log buffers (a
    /// single save allocated two of about 2 KB, which cost it more than its bucket arithmetic);
    /// a transaction that finds more than ``keptCollections`` kept drops them all.
    private let counters = Mutex<[Int64: Counter]>([:])
    private let transactions = Atomic(0)
    private static let keptCollections = 16

    /// The sequences one transaction took in a collection: `before + 1 ... last`.
    struct Allocated: Equatable {
        let before: Int64
        var last: Int64
    }

    private struct Counter {
        var allocated = Allocated(before: 0, last: 0)
        /// Whether the current transaction took a sequence in the collection.
        var isTaken = false
        /// The row's `digest_log` as the transaction read it with the counter (empty for NULL);
        /// once `isLogChanged`, the log to write back.
        var digestLog: [UInt8] = []
        /// Where a changed log is built, then swapped with `digestLog`.
        var spare: [UInt8] = []
        var isLogChanged = false

        mutating func take(after last: Int64, log: UnsafeRawBufferPointer) {
            allocated = Allocated(before: last, last: last + 1)
            isTaken = true
            isLogChanged = false
            digestLog.removeAll(keepingCapacity: true)
            digestLog.append(contentsOf: log)
        }

        mutating func changeLog(_ body: (inout [UInt8], inout [UInt8]) throws -> Void) throws {
            try body(&digestLog, &spare)
            isLogChanged = true
        }
    }

    /// Marks the counters of an earlier transaction (committed or rolled back) as not taken:
    /// the next sequence reads its row again. Their buffers stay.
    func beginTransaction() {
        counters.withLock { c in
            if c.count > Self.keptCollections { c.removeAll() }
            // Not `c.indices`: it holds the dictionary, so each change below would copy it.
            var index = c.startIndex
            while index != c.endIndex {
                c.values[index].isTaken = false
                c.formIndex(after: &index)
            }
        }
        transactions.add(1, ordering: .relaxed)
    }

    /// Numbers the write transactions of this database in this process.
    var transaction: Int { transactions.load(ordering: .relaxed) }

    /// The last sequence the current transaction took in a collection; nil before its first.
    func last(collectionID: Int64) -> Int64? {
        counters.withLock { c in
            guard let index = c.index(forKey: collectionID), c.values[index].isTaken else { return nil }
            return c.values[index].allocated.last
        }
    }

    /// Lets `body` change the collection's digest log, written back with its counter: `body`
    /// gets the log as read with the counter (empty for NULL) and a spare buffer, and leaves
    /// the new log (empty for NULL) in the first. Returns false, without calling `body`, if
    /// this transaction took no sequence in the collection.
    func changeDigestLog(collectionID: Int64, _ body: (inout [UInt8], inout [UInt8]) throws -> Void) throws -> Bool {
        try counters.withLock { c in
            guard let index = c.index(forKey: collectionID), c.values[index].isTaken else { return false }
            try c.values[index].changeLog(body)
            return true
        }
    }

    func next(_ db: GRDB.Database, collectionID: Int64) throws -> Int64 {
        if let next = counters.withLock({ c -> Int64? in
            guard let index = c.index(forKey: collectionID), c.values[index].isTaken else { return nil }
            c.values[index].allocated.last += 1
            return c.values[index].allocated.last
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
        read.withBlob(1) { log in
            counters.withLock { $0[collectionID, default: Counter()].take(after: last, log: log) }
        }
        return last + 1
    }

    /// Hands back `sequence`, the last one taken, unused: the write it was for wrote nothing.
    func giveBack(_ sequence: Int64, collectionID: Int64) {
        counters.withLock { c in
            guard let index = c.index(forKey: collectionID), c.values[index].isTaken,
                  c.values[index].allocated.last == sequence else { return }
            c.values[index].allocated.last -= 1
        }
    }

    /// Writes the counters back, with the digest logs changed since they were read; call last
    /// in the transaction. Returns what it took.
    @discardableResult
    func flush(_ db: GRDB.Database) throws -> [Int64: Allocated] {
        try counters.withLock { c in
            var taken: [Int64: Allocated] = [:]
            var index = c.startIndex
            while index != c.endIndex {
                defer { c.formIndex(after: &index) }
                guard c.values[index].isTaken else { continue }
                let collectionID = c.keys[index], counter = c.values[index]
                let update = try SQLiteStatement.cached(db, counter.isLogChanged
                    ? "UPDATE collections SET last_seq = ?2, digest_log = ?3 WHERE id = ?1"
                    : "UPDATE collections SET last_seq = ?2 WHERE id = ?1")
                defer { update.reset() }
                update.bind(1, collectionID)
                update.bind(2, counter.allocated.last)
                if counter.isLogChanged, !counter.digestLog.isEmpty {
                    try counter.digestLog.withUnsafeBytes { try update.stepOnce(bindingInPlace: $0, at: 3) }
                } else {
                    if counter.isLogChanged { update.bindNull(3) }
                    _ = try update.step()
                }
                taken[collectionID] = counter.allocated
                c.values[index].isTaken = false
            }
            return taken
        }
    }
}
