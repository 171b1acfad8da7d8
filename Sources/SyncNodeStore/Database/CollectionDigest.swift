import Crypto
import Foundation

/// A summary of a collection's content that two nodes compare to know whether they hold the
/// same documents, without sending them.
///
/// It covers each live document's ID and winning revision, and nothing else: bodies are named
/// by their revision IDs, and local (`_local`) documents are not replicated, so they are left
/// out. Tombstones are left out too: a node that has reaped a deletion's tombstone
/// (``TombstonePolicy``) and one that keeps it hold the same documents, and a document deleted
/// on one side and live on the other still differs.
///
/// Earlier versions counted tombstones in; their digests differ from this one's wherever a
/// collection holds any, until both sides run this version. The order of writes does not matter, only the
/// result. Documents fall into ``bucketCount`` buckets by a hash of their ID; two collections
/// that differ somewhere differ in the buckets that hold the differing documents, so a
/// comparison drills down to those buckets' entries (``DocumentCollection/digestEntries(inBucket:)``)
/// instead of listing everything.
///
/// The store keeps the buckets up to date in the same transaction as every write (saves,
/// deletions, replicated revisions, purges, expiry, conflict resolution), so reading the digest
/// reads 256 small rows and a short log of recent changes, whatever the collection's size.
///
/// The hashes are defined so that any program can compute them (see ``bucket(of:)`` and
/// ``Entry/hash``), for example from a CouchDB's `_changes` feed.
public struct CollectionDigest: Sendable, Equatable {
    /// The number of buckets.
    public static let bucketCount = 256

    /// One bucket: how many documents it holds and the combination of their entries' hashes.
    public struct Bucket: Sendable, Equatable {
        /// Documents in this bucket.
        public let count: Int
        /// Deleted documents (tombstones) in this bucket: 0, since tombstones are left out (a
        /// node of an earlier version may send others).
        public let deleted: Int
        /// The exclusive or of its entries' ``Entry/hash``es, as 32 lowercase hex digits
        /// (zeros when the bucket is empty).
        public let hash: String

        /// A bucket with these figures (as read from another node).
        public init(count: Int, deleted: Int, hash: String) {
            self.count = count
            self.deleted = deleted
            self.hash = hash
        }
    }

    /// What the digest knows of one document.
    public struct Entry: Sendable, Hashable, Codable {
        /// The document's ID.
        public let id: String
        /// Its winning revision.
        public let revisionID: String
        /// Whether that revision is a deletion.
        public let isDeleted: Bool

        /// An entry with these values.
        public init(id: String, revisionID: String, isDeleted: Bool) {
            self.id = id
            self.revisionID = revisionID
            self.isDeleted = isDeleted
        }

        /// The entry's 128-bit hash: the first 16 bytes of the SHA-256 of the ID's UTF-8 bytes,
        /// a zero byte, the revision ID's, a zero byte, and `1` (deleted) or `0`.
        public var hash: [UInt8] { CollectionDigest.bytes(of: words) }

        /// ``hash`` as two big-endian words.
        var words: Words {
            var id = self.id, rev = revisionID
            return id.withUTF8 { id in rev.withUTF8 { rev in Self.words(id: UnsafeRawBufferPointer(id), rev: UnsafeRawBufferPointer(rev), deleted: isDeleted) } }
        }

        static func words(id: UnsafeRawBufferPointer, rev: UnsafeRawBufferPointer, deleted: Bool) -> Words {
            // The input is put together first and hashed in one call (every write hashes one
            // to three entries).
            withUnsafeTemporaryAllocation(byteCount: id.count + rev.count + 3, alignment: 1) { input in
                input.copyMemory(from: id)
                input[id.count] = 0
                UnsafeMutableRawBufferPointer(rebasing: input[(id.count + 1)...]).copyMemory(from: rev)
                input[id.count + 1 + rev.count] = 0
                input[id.count + 2 + rev.count] = deleted ? UInt8(ascii: "1") : UInt8(ascii: "0")
                return ShortSHA256.withHash(of: UnsafeRawBufferPointer(input)) { Words(loading: $0, at: 0) }
            }
        }
    }

    /// A 128-bit hash as two words, so that combining hashes allocates nothing.
    struct Words: Equatable {
        var high: UInt64 = 0
        var low: UInt64 = 0

        init(high: UInt64 = 0, low: UInt64 = 0) {
            self.high = high
            self.low = low
        }

        /// The words stored as 16 big-endian bytes; nil for any other length.
        init?(bytes: UnsafeRawBufferPointer) {
            guard bytes.count == 16 else { return nil }
            self.init(loading: bytes, at: 0)
        }

        /// The words stored as 16 big-endian bytes at `offset` of `bytes`, which must hold them.
        init(loading bytes: UnsafeRawBufferPointer, at offset: Int) {
            self.init(high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                      low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
        }

        /// Stores the words as 16 big-endian bytes at `offset` of `bytes`, which must have room.
        func store(into bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
            bytes.storeBytes(of: high.bigEndian, toByteOffset: offset, as: UInt64.self)
            bytes.storeBytes(of: low.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        }

        static func ^= (a: inout Words, b: Words) {
            a.high ^= b.high
            a.low ^= b.low
        }
    }

    /// Live documents.
    public var count: Int { buckets.reduce(0) { $0 + $1.count } }
    /// Tombstones counted in: 0, unless an earlier version's node computed it.
    public var deletedCount: Int { buckets.reduce(0) { $0 + $1.deleted } }
    /// The whole digest as 64 lowercase hex digits: the SHA-256 of every bucket's count, deleted
    /// count (each 8 bytes, big-endian) and hash, in bucket order. Equal roots mean equal content.
    public let root: String
    /// The ``bucketCount`` buckets, in order.
    public let buckets: [Bucket]

    /// A digest of these buckets (as read from another node); nil unless there are ``bucketCount``
    /// of them, each hash 32 hex digits.
    public init?(buckets: [Bucket]) {
        guard buckets.count == Self.bucketCount else { return nil }
        var sha = SHA256()
        for bucket in buckets {
            guard let hash = Hex.bytes(bucket.hash), hash.count == 16, bucket.count >= 0, bucket.deleted >= 0 else { return nil }
            withUnsafeBytes(of: UInt64(bucket.count).bigEndian) { sha.update(bufferPointer: $0) }
            withUnsafeBytes(of: UInt64(bucket.deleted).bigEndian) { sha.update(bufferPointer: $0) }
            sha.update(data: hash)
        }
        self.buckets = buckets
        root = Hex.string(Array(sha.finalize()))
    }

    /// The digest of these entries, computed from scratch (for a peer that keeps none, such as
    /// CouchDB, and to check the one the store keeps). Each ID must appear once; deleted ones
    /// are left out.
    public init<S: Sequence>(entries: S) where S.Element == Entry {
        var sums = [Accumulator](repeating: Accumulator(), count: Self.bucketCount)
        for entry in entries where !entry.isDeleted { sums[Self.bucket(of: entry.id)].add(entry.words, deleted: false) }
        // Every hash is 32 hex digits and there are bucketCount buckets: it cannot fail.
        self.init(buckets: sums.map(\.bucket))!
    }

    /// The bucket of a document ID: the first byte of the SHA-256 of its UTF-8 bytes.
    public static func bucket(of id: String) -> Int {
        var id = id
        return id.withUTF8 { bucket(ofUTF8: UnsafeRawBufferPointer($0)) }
    }

    /// The sub-bucket of a document ID within its bucket: the second byte of the SHA-256 of its
    /// UTF-8 bytes. A large bucket that differs is compared by its sub-buckets (``subBuckets(of:)``)
    /// before any entry is listed.
    public static func subBucket(of id: String) -> Int {
        var id = id
        return id.withUTF8 { idHashByte(UnsafeRawBufferPointer($0), at: 1) }
    }

    /// A bucket's entries summed into ``bucketCount`` sub-buckets by ``subBucket(of:)``, each as
    /// a ``Bucket`` (count, deleted count, hash). Deleted entries are left out.
    public static func subBuckets<S: Sequence>(of entries: S) -> [Bucket] where S.Element == Entry {
        var sums = [Accumulator](repeating: Accumulator(), count: bucketCount)
        for entry in entries where !entry.isDeleted { sums[subBucket(of: entry.id)].add(entry.words, deleted: false) }
        return sums.map(\.bucket)
    }

    static func bucket(ofUTF8 id: UnsafeRawBufferPointer) -> Int { idHashByte(id, at: 0) }

    /// Byte `index` of the SHA-256 of an ID's UTF-8 bytes: 0 is its bucket, 1 its sub-bucket.
    private static func idHashByte(_ id: UnsafeRawBufferPointer, at index: Int) -> Int {
        ShortSHA256.withHash(of: id) { Int($0[index]) }
    }

    /// Running totals of one bucket, or a transaction's change to them (counts may be negative).
    struct Accumulator {
        var count = 0, deleted = 0
        var hash = Words()

        /// Counts an entry in (`sign` 1) or out (-1); either way its hash is combined in, since
        /// exclusive or undoes itself.
        mutating func add(_ entry: Words, deleted isDeleted: Bool, sign: Int = 1) {
            count += sign
            if isDeleted { deleted += sign }
            hash ^= entry
        }

        /// Adds another change (of the same bucket).
        mutating func add(_ other: Accumulator) {
            // Wrapping: a damaged file's counts must not trap; its digest is wrong either way.
            count &+= other.count
            deleted &+= other.deleted
            hash ^= other.hash
        }

        var bucket: Bucket { Bucket(count: count, deleted: deleted, hash: Hex.string(CollectionDigest.bytes(of: hash))) }
    }

    static func bytes(of words: Words) -> [UInt8] {
        withUnsafeBytes(of: (words.high.bigEndian, words.low.bigEndian)) { Array($0) }
    }
}

/// How the digest table and log store an accumulator (an extension, so that the memberwise
/// initializer stays).
extension CollectionDigest.Accumulator {
    /// Bytes a stored accumulator takes: count and deleted count (8 each), hash (16), big-endian.
    static let storedSize = 32

    /// The accumulator stored at `offset` of `bytes`, which must hold ``storedSize`` bytes there.
    init(loading bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.init(count: Int(Int64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))),
                  deleted: Int(Int64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self))),
                  hash: CollectionDigest.Words(loading: bytes, at: offset + 16))
    }

    /// Stores the accumulator at `offset` of `bytes`, which must have ``storedSize`` bytes of room there.
    func store(into bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
        bytes.storeBytes(of: Int64(count).bigEndian, toByteOffset: offset, as: Int64.self)
        bytes.storeBytes(of: Int64(deleted).bigEndian, toByteOffset: offset + 8, as: Int64.self)
        hash.store(into: bytes, at: offset + 16)
    }
}
