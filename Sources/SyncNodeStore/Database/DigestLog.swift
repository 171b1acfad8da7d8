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
        let bytes = try adding(changes.sorted { $0.bucket < $1.bucket }, toStored: logged, db, collectionID: collectionID)
        if bytes != logged { try write(db, collectionID: collectionID, bytes) }
    }

    /// The list to store once a transaction's `changes` (sorted by bucket, each bucket once) are
    /// added to the `stored` one (as read with the collection's sequence counter,
    /// ``SequenceAllocator``): longer, or empty when they were folded into the table.
    static func adding(_ changes: some RandomAccessCollection<(bucket: Int, change: CollectionDigest.Accumulator)>, toStored stored: [UInt8],
                       _ db: GRDB.Database, collectionID: Int64) throws -> [UInt8] {
        guard stored.count % entrySize == 0 else { throw damaged(collectionID) }
        try stored.withUnsafeBytes { try checkOrder($0, collectionID: collectionID) }
        let merged = merging(changes, into: stored)
        if merged.count <= capacity * entrySize { return merged }
        // Folded: the merged list is what the table takes (sorted by bucket, each bucket once).
        try merged.withUnsafeBytes { list in
            try DigestTable.apply(db, collectionID: collectionID, (0..<(list.count / entrySize)).lazy.map { (bucket(in: list, at: $0), change(in: list, at: $0)) })
        }
        return []
    }

    /// `stored` (checked) with `changes` added: one new list, the stored entries copied around
    /// the ones that change. Decoding the list and inserting into it, and copying through
    /// closures that captured their counters (which Swift then checked at run time), cost a
    /// single save more than hashing its entries does.
    private static func merging(_ changes: some RandomAccessCollection<(bucket: Int, change: CollectionDigest.Accumulator)>, into stored: [UInt8]) -> [UInt8] {
        let storedCount = stored.count / entrySize
        return stored.withUnsafeBytes { old in
            [UInt8](unsafeUninitializedCapacity: stored.count + changes.count * entrySize) { buffer, initialized in
                let new = UnsafeMutableRawBufferPointer(buffer)
                var written = 0, next = 0
                for (bucket, change) in changes {
                    // The stored entries of lower buckets are copied as they are.
                    var low = next, high = storedCount
                    while low < high {
                        let middle = (low + high) / 2
                        if self.bucket(in: old, at: middle) < bucket { low = middle + 1 } else { high = middle }
                    }
                    written += copyEntries(old, next..<low, into: new, at: written)
                    next = low
                    var total = change
                    if next < storedCount, self.bucket(in: old, at: next) == bucket {
                        total.add(self.change(in: old, at: next))
                        next += 1
                    }
                    store(total, bucket: bucket, into: new, at: written)
                    written += 1
                }
                written += copyEntries(old, next..<storedCount, into: new, at: written)
                initialized = written * entrySize
            }
        }
    }

    /// Copies entries `range` of `list` to entry `index` of `new`; returns how many.
    private static func copyEntries(_ list: UnsafeRawBufferPointer, _ range: Range<Int>, into new: UnsafeMutableRawBufferPointer, at index: Int) -> Int {
        UnsafeMutableRawBufferPointer(rebasing: new[(index * entrySize)...])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: list[(range.lowerBound * entrySize)..<(range.upperBound * entrySize)]))
        return range.count
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
