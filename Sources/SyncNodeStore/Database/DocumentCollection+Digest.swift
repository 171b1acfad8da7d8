import GRDB

extension DocumentCollection {
    /// The collection's digest: compare it with another node's to know whether both hold the
    /// same documents at the same winning revisions.
    ///
    /// It reads 256 small rows and a short log of recent changes, whatever the collection's
    /// size, and only one row while nothing was written since the last read. Inside
    /// ``Database/inBatch(_:)`` it does not include the batch's own writes yet: they count from
    /// the batch's commit.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func digest() throws -> CollectionDigest {
        try checkLive()
        let remember = !ThreadConnection.isWriting(database)
        return try database.read { db in
            try digestMemo.digest(db, tables, lastSequence: remember ? try lastSequence(db) : nil)
        }
    }

    /// The entries of one of the digest's buckets, sorted by ID: where two digests' buckets
    /// differ, these tell which documents differ.
    /// - Parameter bucket: 0 ..< ``CollectionDigest/bucketCount``.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a bucket out of range;
    ///   ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func digestEntries(inBucket bucket: Int) throws -> [CollectionDigest.Entry] {
        try checkLive()
        guard (0..<CollectionDigest.bucketCount).contains(bucket) else {
            throw StoreError.invalidValue("digest bucket \(bucket) is not in 0...\(CollectionDigest.bucketCount - 1)")
        }
        return try database.read { db in try DigestTable.entries(db, tables, bucket: bucket) }
    }
}

extension Database {
    /// Stops keeping this database's digests, for as long as it stays open: only to measure
    /// what keeping them costs. Its digests are wrong afterwards.
    package func stopKeepingDigestsForMeasurement() {
        digests.enabled.store(false, ordering: .relaxed)
    }
}
