import Foundation
import GRDB

/// A collection's digest changes not yet folded into its `c<id>_digest` table: a short list in
/// `collections.digest_log`, the row whose sequence counter every write already rewrites.
///
/// A transaction that changes few buckets (a single save) adds its changes to the list, so its
/// commit need not write a page it would not write without digests. Writing the digest table's
/// leaf instead adds a page to every commit (on a bare SQLite schema of the same shape, 5.2 WAL
/// pages per small commit instead of 4.2); with the list, a benchmark's files with and without
/// digests wrote as many WAL pages. A binary from before the list reads the table alone: its
/// digests leave the list out until a fold. Once the list would
/// name more than ``capacity`` buckets, all of it is folded into the table at once (a batch of
/// writes does so at its commit).
///
/// Reading the digest adds the list to the table's rows (``DigestTable/read(_:_:)``).
enum DigestLog {
    /// Buckets the list may name: its row stays within one page (about 2 KB), and a fold
    /// comes after about 75 single saves of new documents.
    static let capacity = 64
    /// Bucket (2 bytes), count change and deleted change (8 each), hash (16), big-endian.
    private static let entrySize = 34

    typealias Changes = [Int: CollectionDigest.Accumulator]

    /// The list kept for collection `collectionID`.
    static func read(_ db: GRDB.Database, collectionID: Int64) throws -> Changes {
        try stored(db, collectionID: collectionID).changes
    }

    /// Adds a transaction's `changes` to the list, or folds the list and them into the table when
    /// together they name more than ``capacity`` buckets.
    ///
    /// The list is changed where it lies, as bytes sorted by bucket, so a save does not decode
    /// and encode all of it.
    static func record(_ db: GRDB.Database, collectionID: Int64, _ changes: some Collection<(bucket: Int, change: CollectionDigest.Accumulator)>) throws {
        let logged = try stored(db, collectionID: collectionID)
        let bytes = try adding(changes, to: logged, db, collectionID: collectionID)
        if bytes != logged.bytes { try write(db, collectionID: collectionID, bytes) }
    }

    /// The list to store once a transaction's `changes` are added to the `stored` one (as read
    /// with the collection's sequence counter, ``SequenceAllocator``): longer, or empty when
    /// they were folded into the table.
    static func adding(_ changes: some Collection<(bucket: Int, change: CollectionDigest.Accumulator)>, toStored stored: [UInt8],
                       _ db: GRDB.Database, collectionID: Int64) throws -> [UInt8] {
        guard let logged = Entries(checking: stored) else { throw damaged(collectionID) }
        return try adding(changes, to: logged, db, collectionID: collectionID)
    }

    private static func adding(_ changes: some Collection<(bucket: Int, change: CollectionDigest.Accumulator)>, to logged: Entries,
                               _ db: GRDB.Database, collectionID: Int64) throws -> [UInt8] {
        // A batch that alone names more buckets than the list holds is not put in the list first.
        if changes.count <= capacity {
            var log = logged
            if changes.allSatisfy({ log.add($0.change, to: $0.bucket) }) { return log.bytes }
        }
        var merged = logged.changes
        for (bucket, change) in changes { merged[bucket, default: .init()].add(change) }
        try DigestTable.apply(db, collectionID: collectionID, merged.sorted { $0.key < $1.key }.lazy.map { ($0.key, $0.value) })
        return []
    }

    private static func damaged(_ collectionID: Int64) -> StoreError {
        StoreError.storage("the digest log of collection \(collectionID) is damaged")
    }

    private static func stored(_ db: GRDB.Database, collectionID: Int64) throws -> Entries {
        let read = try SQLiteStatement.cached(db, "SELECT digest_log FROM collections WHERE id = ?")
        read.bind(1, collectionID)
        defer { read.reset() }
        // Writes name only live collections (a dropped one is forgotten first): no row is damage.
        guard try read.step() else { throw StoreError.storage("collection \(collectionID) has no row for its digest log") }
        guard let log = read.withBlob(0, { Entries(checking: Array($0)) }) else { throw damaged(collectionID) }
        return log
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

    /// The stored list: entries of ``entrySize`` bytes, sorted by bucket, each bucket once.
    private struct Entries {
        private(set) var bytes: [UInt8]

        /// The list in a stored value (empty for NULL); nil unless it is whole entries of known
        /// buckets, sorted, each once.
        init?(checking bytes: [UInt8]) {
            self.bytes = bytes
            guard bytes.count % entrySize == 0 else { return nil }
            for index in 0..<count {
                guard bucket(at: index) < CollectionDigest.bucketCount, index == 0 || bucket(at: index - 1) < bucket(at: index) else { return nil }
            }
        }

        var count: Int { bytes.count / entrySize }

        var changes: Changes {
            var changes = Changes()
            for index in 0..<count { changes[bucket(at: index)] = change(at: index) }
            return changes
        }

        func bucket(at index: Int) -> Int { Int(load(UInt16.self, index * entrySize)) }

        func change(at index: Int) -> CollectionDigest.Accumulator {
            let start = index * entrySize
            return CollectionDigest.Accumulator(
                count: Int(Int64(bitPattern: load(UInt64.self, start + 2))),
                deleted: Int(Int64(bitPattern: load(UInt64.self, start + 10))),
                hash: bytes.withUnsafeBytes { CollectionDigest.Words(loading: $0, at: start + 18) })
        }

        /// Adds `change` to its bucket's entry, or inserts one; false when the list is full.
        mutating func add(_ change: CollectionDigest.Accumulator, to bucket: Int) -> Bool {
            var low = 0, high = count
            while low < high {
                let middle = (low + high) / 2
                if self.bucket(at: middle) < bucket { low = middle + 1 } else { high = middle }
            }
            var total = change
            if low < count, self.bucket(at: low) == bucket {
                total.add(self.change(at: low))
                store(total, bucket: bucket, at: low)
                return true
            }
            guard count < capacity else { return false }
            bytes.insert(contentsOf: repeatElement(0, count: entrySize), at: low * entrySize)
            store(total, bucket: bucket, at: low)
            return true
        }

        private mutating func store(_ change: CollectionDigest.Accumulator, bucket: Int, at index: Int) {
            let start = index * entrySize
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt16(bucket).bigEndian, toByteOffset: start, as: UInt16.self)
                raw.storeBytes(of: UInt64(bitPattern: Int64(change.count)).bigEndian, toByteOffset: start + 2, as: UInt64.self)
                raw.storeBytes(of: UInt64(bitPattern: Int64(change.deleted)).bigEndian, toByteOffset: start + 10, as: UInt64.self)
                change.hash.store(into: raw, at: start + 18)
            }
        }

        private func load<I: FixedWidthInteger>(_ type: I.Type, _ offset: Int) -> I {
            bytes.withUnsafeBytes { I(bigEndian: $0.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        }
    }
}
