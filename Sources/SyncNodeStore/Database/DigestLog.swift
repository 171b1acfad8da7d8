import Foundation
import GRDB

/// A collection's digest changes not yet folded into its digest table (``DigestTable``): a short list in
/// `collections.digest_log`, the row whose sequence counter every write already rewrites.
///
/// A transaction that changes few buckets (a single save) adds its changes to the list, so its
/// commit need not write a page it would not write without digests. Writing the digest table's
/// leaf instead adds a page to every commit (on a bare SQLite schema of the same shape, 5.2 WAL
/// pages per small commit instead of 4.2); with the list, a benchmark's files with and without
/// digests wrote as many WAL pages. Once the list would
/// name more than ``capacity`` buckets, all of it is folded into the table at once (a batch of
/// writes does so at its commit).
///
/// Reading the digest adds the list to the table's rows (``DigestTable/read(_:_:)``).
enum DigestLog {
    /// Buckets the list may name: its row stays within one page (about 2 KB), and a fold
    /// comes after about 75 single saves of new documents.
    static let capacity = 64
    /// Bucket (2 bytes, big-endian), then the change as the table stores it.
    private static let entrySize = 2 + CollectionDigest.Accumulator.storedSize

    typealias Changes = [Int: CollectionDigest.Accumulator]

    /// The list kept for collection `collectionID`.
    static func read(_ db: GRDB.Database, collectionID: Int64) throws -> Changes {
        try decode(stored(db, collectionID: collectionID), collectionID: collectionID)
    }

    /// Adds a transaction's `changes` to the list, or folds the list and them into the table when
    /// together they name more than ``capacity`` buckets.
    static func record(_ db: GRDB.Database, collectionID: Int64, _ changes: some Collection<(bucket: Int, change: CollectionDigest.Accumulator)>) throws {
        let logged = try stored(db, collectionID: collectionID)
        var log = logged, spare: [UInt8] = []
        try add(changes.sorted { $0.bucket < $1.bucket }, to: &log, spare: &spare, db, collectionID: collectionID)
        if log != logged { try write(db, collectionID: collectionID, log) }
    }

    /// Adds a transaction's `changes` (sorted by bucket, each bucket once) to `log`, the stored
    /// list (as read with the collection's sequence counter, ``SequenceAllocator``), or folds
    /// them and it into the table and leaves `log` empty. `spare` is where the new list is
    /// built: two buffers kept from one transaction to the next, as a new one each cost a
    /// single save more than its bucket arithmetic.
    static func add(_ changes: some RandomAccessCollection<(bucket: Int, change: CollectionDigest.Accumulator)>, to log: inout [UInt8],
                    spare: inout [UInt8], _ db: GRDB.Database, collectionID: Int64) throws {
        guard log.count % entrySize == 0 else { throw damaged(collectionID) }
        try log.withUnsafeBytes { try checkOrder($0, collectionID: collectionID) }
        merge(changes, into: log, giving: &spare)
        swap(&log, &spare)
        if log.count <= capacity * entrySize { return }
        // Folded: the merged list is what the table takes (sorted by bucket, each bucket once).
        try log.withUnsafeBytes { list in
            try DigestTable.apply(db, collectionID: collectionID, (0..<(list.count / entrySize)).lazy.map { (bucket(in: list, at: $0), change(in: list, at: $0)) })
        }
        log.removeAll(keepingCapacity: true)
    }

    /// `stored` (checked) with `changes` added, written to `new`: the stored entries copied
    /// around the ones that change. Decoding the list and inserting into it, and copying
    /// through closures that captured their counters (which Swift then checked at run time),
    /// cost a single save more than hashing its entries does.
    private static func merge(_ changes: some RandomAccessCollection<(bucket: Int, change: CollectionDigest.Accumulator)>, into stored: [UInt8],
                              giving new: inout [UInt8]) {
        let storedCount = stored.count / entrySize
        new.removeAll(keepingCapacity: true)
        new.reserveCapacity(stored.count + changes.count * entrySize)
        stored.withUnsafeBytes { old in
            withUnsafeTemporaryAllocation(byteCount: entrySize, alignment: 8) { entry in
                var next = 0
                for (bucket, change) in changes {
                    // The stored entries of lower buckets are copied as they are.
                    var low = next, high = storedCount
                    while low < high {
                        let middle = (low + high) / 2
                        if self.bucket(in: old, at: middle) < bucket { low = middle + 1 } else { high = middle }
                    }
                    new.append(contentsOf: entries(old, next..<low))
                    next = low
                    var total = change
                    if next < storedCount, self.bucket(in: old, at: next) == bucket {
                        total.add(self.change(in: old, at: next))
                        next += 1
                    }
                    store(total, bucket: bucket, into: entry, at: 0)
                    new.append(contentsOf: UnsafeRawBufferPointer(entry))
                }
                new.append(contentsOf: entries(old, next..<storedCount))
            }
        }
    }

    /// Entries `range` of `list`.
    private static func entries(_ list: UnsafeRawBufferPointer, _ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: list[(range.lowerBound * entrySize)..<(range.upperBound * entrySize)])
    }

    private static func damaged(_ collectionID: Int64) -> StoreError {
        StoreError.storage("the digest log of collection \(collectionID) is damaged")
    }

    private static func stored(_ db: GRDB.Database, collectionID: Int64) throws -> [UInt8] {
        let read = try SQLiteStatement.cached(db, "SELECT digest_log FROM collections WHERE id = ?")
        read.bind(1, collectionID)
        defer { read.reset() }
        // Writes name only live collections (a dropped one is forgotten first): no row is damage.
        guard try read.step() else { throw StoreError.storage("collection \(collectionID) has no row for its digest log") }
        return read.withBlob(0) { Array($0) }
    }

    private static func write(_ db: GRDB.Database, collectionID: Int64, _ bytes: [UInt8]) throws {
        let write = try SQLiteStatement.cached(db, "UPDATE collections SET digest_log = ? WHERE id = ?")
        defer { write.reset() }
        if bytes.isEmpty {
            write.bindNull(1)
        } else {
            bytes.withUnsafeBytes { write.bind(1, blob: $0) }
        }
        write.bind(2, collectionID)
        _ = try write.step()
    }

    /// The changes in a stored list (empty for NULL): entries of ``entrySize`` bytes, sorted by
    /// bucket, each bucket once; anything else is damage.
    private static func decode(_ bytes: [UInt8], collectionID: Int64) throws -> Changes {
        guard bytes.count % entrySize == 0 else { throw damaged(collectionID) }
        return try bytes.withUnsafeBytes { raw in
            try checkOrder(raw, collectionID: collectionID)
            var changes = Changes()
            for index in 0..<(raw.count / entrySize) { changes[bucket(in: raw, at: index)] = change(in: raw, at: index) }
            return changes
        }
    }

    /// Throws unless the list's entries name known buckets in increasing order, each once.
    private static func checkOrder(_ list: UnsafeRawBufferPointer, collectionID: Int64) throws {
        var previous = -1
        for index in 0..<(list.count / entrySize) {
            let bucket = bucket(in: list, at: index)
            guard bucket > previous, bucket < CollectionDigest.bucketCount else { throw damaged(collectionID) }
            previous = bucket
        }
    }

    private static func bucket(in list: UnsafeRawBufferPointer, at index: Int) -> Int {
        Int(UInt16(bigEndian: list.loadUnaligned(fromByteOffset: index * entrySize, as: UInt16.self)))
    }

    private static func change(in list: UnsafeRawBufferPointer, at index: Int) -> CollectionDigest.Accumulator {
        CollectionDigest.Accumulator(loading: list, at: index * entrySize + 2)
    }

    private static func store(_ change: CollectionDigest.Accumulator, bucket: Int, into list: UnsafeMutableRawBufferPointer, at index: Int) {
        list.storeBytes(of: UInt16(bucket).bigEndian, toByteOffset: index * entrySize, as: UInt16.self)
        change.store(into: list, at: index * entrySize + 2)
    }
}
