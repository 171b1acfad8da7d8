import GRDB
import Synchronization

/// What a write transaction changes in its collections' digests: each document row it writes
/// or deletes takes its old entry out and puts its new one in, summed here per bucket and
/// written once before the transaction commits (as ``SequenceAllocator`` does for sequences).
/// A row UPDATE per document, as triggers would do, made bulk writes a third slower.
///
/// Every statement that changes a documents table's `id`, `rev` or `deleted` must be recorded
/// here: `DocumentCollection.persist` and `purgeRow`, and expiry's purge. `DigestTests` checks
/// the digest against a recomputation after each kind of write.
final class DigestLedger: Sendable {
    /// Per collection: the change so far to each bucket in this transaction. Kept from one
    /// transaction to the next, emptied bucket by bucket: making its arrays anew cost a single
    /// save more than hashing its entries does.
    private let state = Mutex(State())
    /// Off only to measure what digests cost (`SyncNodeBenchmarks digest`); the file's digests are wrong then.
    let enabled = Atomic(true)

    private struct State {
        var collections: [Int64: Buckets] = [:]
        /// Whether any collection holds a change not yet flushed (after a rollback, say).
        var isPending = false

        /// The last collection written to: most transactions write to one.
        var last: (collectionID: Int64, buckets: Buckets)?

        mutating func buckets(of collectionID: Int64) -> Buckets {
            if let last, last.collectionID == collectionID { return last.buckets }
            let buckets = collections[collectionID] ?? Buckets()
            collections[collectionID] = buckets
            last = (collectionID, buckets)
            return buckets
        }

        mutating func clear() {
            guard isPending else { return }
            for buckets in collections.values { buckets.clear() }
            isPending = false
        }
    }

    /// A collection's bucket changes, and which buckets have one. A class, so that a flush
    /// that reads it while it is in the dictionary and then empties it copies no array.
    /// Only used under the ledger's lock, so its properties skip Swift's run-time exclusivity
    /// checks, which cost a save more than its bucket arithmetic. Sendable, unchecked, for the
    /// same reason: the flush, holding the lock, reads it from the closure it runs under the
    /// sequence allocator's lock.
    private final class Buckets: @unchecked Sendable {
        @exclusivity(unchecked) var sums = [CollectionDigest.Accumulator](repeating: .init(), count: CollectionDigest.bucketCount)
        @exclusivity(unchecked) var isTouched = [Bool](repeating: false, count: CollectionDigest.bucketCount)
        @exclusivity(unchecked) var touched: [Int] = []

        func add(_ change: CollectionDigest.Accumulator, to bucket: Int) {
            if !isTouched[bucket] {
                isTouched[bucket] = true
                touched.append(bucket)
            }
            sums[bucket].add(change)
        }

        func clear() {
            for bucket in touched {
                sums[bucket] = .init()
                isTouched[bucket] = false
            }
            touched.removeAll(keepingCapacity: true)
        }
    }

    /// Forgets an earlier transaction's changes (rolled back: a commit flushed them).
    func beginTransaction() {
        state.withLock { $0.clear() }
    }

    /// A document row of collection `collectionID` went from `old` to `new` (nil: no row). A
    /// tombstone counts as no row: digests leave tombstones out.
    func record(collectionID: Int64, id: String, old: (rev: String, deleted: Bool)?, new: (rev: String, deleted: Bool)?) {
        let old = old?.deleted == true ? nil : old, new = new?.deleted == true ? nil : new
        guard old?.rev != new?.rev || old?.deleted != new?.deleted, enabled.load(ordering: .relaxed) else { return }
        var id = id
        id.withUTF8 { utf8 in
            let idBytes = UnsafeRawBufferPointer(utf8)
            let bucket = CollectionDigest.bucket(ofUTF8: idBytes)
            var change = CollectionDigest.Accumulator()
            func count(_ side: (rev: String, deleted: Bool), sign: Int) {
                var rev = side.rev
                let words = rev.withUTF8 { CollectionDigest.Entry.words(id: idBytes, rev: UnsafeRawBufferPointer($0), deleted: side.deleted) }
                change.add(words, deleted: side.deleted, sign: sign)
            }
            if let old { count(old, sign: -1) }
            if let new { count(new, sign: 1) }
            state.withLock { state in
                state.buckets(of: collectionID).add(change, to: bucket)
                state.isPending = true
            }
        }
    }

    /// A collection dropped in this transaction: it has no digest left to write to.
    func forget(collectionID: Int64) {
        state.withLock { state in
            state.collections.removeValue(forKey: collectionID)
            if state.last?.collectionID == collectionID { state.last = nil }
        }
    }

    /// Adds the changes to the digest logs (``DigestLog``) that `sequences` read with their
    /// counters and writes back with them, or folds them into the tables; call last in the
    /// transaction, before `sequences` writes its counters.
    func flush(_ db: GRDB.Database, with sequences: SequenceAllocator) throws {
        try state.withLock { state in
            guard state.isPending else { return }
            defer { state.clear() }
            for (collectionID, buckets) in state.collections where !buckets.touched.isEmpty {
                // Sorted where it is (clearing it empties it whatever its order), and read
                // where it is: arrays made for the changes cost a save more than adding them.
                buckets.touched.sort()
                let changes = buckets.touched.lazy.map { (bucket: $0, change: buckets.sums[$0]) }
                let logged = try sequences.changeDigestLog(collectionID: collectionID) { log, spare in
                    try DigestLog.add(changes, to: &log, spare: &spare, db, collectionID: collectionID)
                }
                // Every write that changes a digest takes a sequence; this is only a safe default.
                if !logged { try DigestLog.record(db, collectionID: collectionID, changes) }
            }
        }
    }
}
