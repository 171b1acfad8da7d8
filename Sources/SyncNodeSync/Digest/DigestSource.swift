import SyncNodeStore

/// Where a ``CollectionDigest`` and its buckets' entries come from: a local collection, or a
/// peer over HTTP (``RemoteDigest``). ``DigestComparison`` compares any two.
public protocol DigestSource: Sendable {
    /// The whole digest.
    func digest() async throws -> CollectionDigest
    /// One bucket's entries, sorted by ID.
    func digestEntries(inBucket bucket: Int) async throws -> [CollectionDigest.Entry]
}

extension DocumentCollection: DigestSource {}
