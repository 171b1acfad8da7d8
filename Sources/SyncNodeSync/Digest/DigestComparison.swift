import SyncNodeStore

/// Which documents two collections hold differently, found by comparing their digests and then
/// only the buckets whose hashes differ, and in a large bucket only the sub-buckets that differ:
/// two million-document collections that differ in three documents exchange the two digests,
/// at most three buckets' sub-bucket summaries and three sub-buckets' entries (about 60 KB a side).
public enum DigestComparison {
    /// A document the two sides hold differently: each side's entry, nil where it has none.
    public struct Difference: Sendable, Equatable {
        /// The document's ID.
        public let id: String
        /// The first side's winning revision and deletion flag, nil when it lacks the document.
        public let a: CollectionDigest.Entry?
        /// The second side's.
        public let b: CollectionDigest.Entry?
    }

    /// What a comparison found.
    public struct Outcome: Sendable {
        /// The first side's digest.
        public let a: CollectionDigest
        /// The second side's digest.
        public let b: CollectionDigest
        /// The differing documents, sorted by ID; empty when the roots are equal.
        public let differences: [Difference]
        /// Whether both hold the same documents at the same winning revisions.
        public var equal: Bool { a.root == b.root }
    }

    /// Compares `a` and `b`, drilling into the buckets that differ.
    public static func compare(_ a: some DigestSource, _ b: some DigestSource) async throws -> Outcome {
        try await compare(a, b, listingUpTo: smallBucket)
    }

    /// ``compare(_:_:)``, listing a differing bucket whole when both sides hold at most `listingUpTo`
    /// entries of it together (tests use 0 to reach the sub-buckets with few documents).
    package static func compare(_ a: some DigestSource, _ b: some DigestSource, listingUpTo smallBucket: Int) async throws -> Outcome {
        async let first = a.digest()
        async let second = b.digest()
        let (left, right) = try await (first, second)
        guard left.root != right.root else { return Outcome(a: left, b: right, differences: []) }
        var differences: [Difference] = []
        for bucket in 0..<CollectionDigest.bucketCount where left.buckets[bucket] != right.buckets[bucket] {
            // A few entries cost less than the 256 sub-bucket summaries that would point to them.
            guard left.buckets[bucket].count + right.buckets[bucket].count > smallBucket else {
                async let x = a.digestEntries(inBucket: bucket)
                async let y = b.digestEntries(inBucket: bucket)
                differences += diff(try await x, try await y)
                continue
            }
            async let x = BucketView(a, bucket: bucket)
            async let y = BucketView(b, bucket: bucket)
            let (left, right) = try await (x, y)
            for sub in 0..<CollectionDigest.bucketCount where left.subBuckets[sub] != right.subBuckets[sub] {
                async let x = left.entries(inSubBucket: sub)
                async let y = right.entries(inSubBucket: sub)
                differences += diff(try await x, try await y)
            }
        }
        return Outcome(a: left, b: right, differences: differences.sorted { $0.id < $1.id })
    }

    /// One side of a large differing bucket: a local collection's is listed once (reading any of
    /// it scans the ID index), a peer's is asked for its sub-bucket sums, then for the entries of
    /// the sub-buckets that differ.
    private struct BucketView: Sendable {
        let source: any DigestSource
        let bucket: Int
        let listed: [CollectionDigest.Entry]?
        let subBuckets: [CollectionDigest.Bucket]

        init(_ source: some DigestSource, bucket: Int) async throws {
            self.source = source
            self.bucket = bucket
            if let local = source as? DocumentCollection {
                let entries = try local.digestEntries(inBucket: bucket)
                listed = entries
                subBuckets = CollectionDigest.subBuckets(of: entries)
            } else {
                listed = nil
                subBuckets = try await source.digestSubBuckets(ofBucket: bucket)
            }
        }

        func entries(inSubBucket sub: Int) async throws -> [CollectionDigest.Entry] {
            if let listed { return listed.filter { CollectionDigest.subBucket(of: $0.id) == sub } }
            return try await source.digestEntries(inBucket: bucket, subBucket: sub)
        }
    }

    /// Entries on both sides together up to which a differing bucket is listed whole.
    static let smallBucket = 512

    /// The entries that differ between two lists of one bucket.
    static func diff(_ a: [CollectionDigest.Entry], _ b: [CollectionDigest.Entry]) -> [Difference] {
        let left = Dictionary(a.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        let right = Dictionary(b.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        return Set(left.keys).union(right.keys).compactMap { id in
            left[id] == right[id] ? nil : Difference(id: id, a: left[id], b: right[id])
        }
    }
}
