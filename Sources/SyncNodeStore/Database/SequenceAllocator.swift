import GRDB
import Synchronization

/// Hands out collection sequence numbers inside a write transaction: the
/// counter row is read at a collection's first change in the transaction and
/// written back once before commit, instead of an UPDATE per document.
/// The transaction holds SQLite's write lock, so no other connection or
/// process can interleave.
final class SequenceAllocator: Sendable {
    /// Per collection: the counter when the transaction began, and the last sequence handed out.
    private let counters = Mutex<[Int64: Allocated]>([:])
    private let transactions = Atomic(0)

    /// The sequences one transaction took in a collection: `before + 1 ... last`.
    struct Allocated: Equatable {
        let before: Int64
        var last: Int64
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
        counters.withLock { $0[collectionID]?.last }
    }

    func next(_ db: GRDB.Database, collectionID: Int64) throws -> Int64 {
        if let next = counters.withLock({ c -> Int64? in
            guard c[collectionID] != nil else { return nil }
            c[collectionID]?.last += 1
            return c[collectionID]?.last
        }) {
            return next
        }
        guard let last = try Int64.fetchOne(db, sql: "SELECT last_seq FROM collections WHERE id = ?", arguments: [collectionID]) else {
            throw StoreError.notFound(.collection, "collection #\(collectionID)")
        }
        counters.withLock { $0[collectionID] = Allocated(before: last, last: last + 1) }
        return last + 1
    }

    /// Hands back `sequence`, the last one taken, unused: the write it was for wrote nothing.
    func giveBack(_ sequence: Int64, collectionID: Int64) {
        counters.withLock { c in
            if c[collectionID]?.last == sequence { c[collectionID]?.last -= 1 }
        }
    }

    /// Writes the counters back; call last in the transaction. Returns what it took.
    @discardableResult
    func flush(_ db: GRDB.Database) throws -> [Int64: Allocated] {
        let dirty = counters.withLock { c in
            defer { c.removeAll(keepingCapacity: true) }
            return c
        }
        for (collectionID, allocated) in dirty {
            try db.execute(sql: "UPDATE collections SET last_seq = ? WHERE id = ?", arguments: [allocated.last, collectionID])
        }
        return dirty
    }
}
