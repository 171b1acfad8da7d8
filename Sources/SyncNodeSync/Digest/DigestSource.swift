import SyncNodeStore

/// Where a `CollectionDigest` and its buckets' entries come from: a local collection, or a
/// peer over HTTP (``RemoteDigest``). ``DigestComparison`` compares any two.
public protocol DigestSource: Sendable {
    /// The whole digest.
    func digest() async throws -> CollectionDigest
    /// One bucket's entries, sorted by ID.
    func digestEntries(inBucket bucket: Int) async throws -> [CollectionDigest.Entry]
    /// One bucket's `CollectionDigest/bucketCount` sub-buckets (`CollectionDigest/subBuckets(of:)`).
    func digestSubBuckets(ofBucket bucket: Int) async throws -> [CollectionDigest.Bucket]
    /// The entries of one sub-bucket of a bucket, sorted by ID.
    func digestEntries(inBucket bucket: Int, subBucket: Int) async throws -> [CollectionDigest.Entry]
}

extension DigestSource {
    /// Summed from the bucket's entries.
    public func digestSubBuckets(ofBucket bucket: Int) async throws -> [CollectionDigest.Bucket] {
        CollectionDigest.subBuckets(of: try await digestEntries(inBucket: bucket))
    }

    /// Filtered from the bucket's entries.
    public func digestEntries(inBucket bucket: Int, subBucket: Int) async throws -> [CollectionDigest.Entry] {
        try await digestEntries(inBucket: bucket).filter { CollectionDigest.subBucket(of: $0.id) == subBucket }
    }
}

extension DocumentCollection: DigestSource {}
