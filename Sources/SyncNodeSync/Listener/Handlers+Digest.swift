import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `GET /{keyspace}/_digest`: the collection's `CollectionDigest` (`count`, `deleted`,
    /// `root`, and 256 `buckets` of `{count, deleted, hash}`); `?buckets=false` leaves the buckets
    /// out. `?bucket=K` lists that bucket's entries instead, `{id, rev, deleted}` sorted by ID;
    /// `&sub=J` only those of its sub-bucket J, and `&subbuckets=true` their sums by sub-bucket
    /// (`CollectionDigest/subBuckets(of:)`). Two nodes with equal roots hold the same documents
    /// at the same winning revisions; where buckets differ, their entries say which documents differ.
    /// `?pending_since=SEQ` adds `pending`, the changes after that sequence: a peer checking
    /// whether it is in sync learns both in one request.
    func digest(_ request: Request, collection: DocumentCollection) throws -> Response {
        let options = QueryOptions(request.uri)
        // Every option checked before anything is read: a wrong one is a 400, never ignored.
        func index(_ name: String) throws -> Int? {
            guard let raw = options[name] else { return nil }
            guard let value = Int(raw), (0..<CollectionDigest.bucketCount).contains(value) else {
                throw CouchError.badRequest("\(name) must be a whole number from 0 to \(CollectionDigest.bucketCount - 1), not '\(raw)'")
            }
            return value
        }
        let bucket = try index("bucket"), sub = try index("sub")
        let sums = try options.bool("subbuckets"), withBuckets = try options.bool("buckets", default: true)
        if bucket == nil, sub != nil || sums {
            throw CouchError.badRequest("sub and subbuckets need bucket (a sub-bucket is one of a bucket's)")
        }
        if sub != nil, sums { throw CouchError.badRequest("ask for sub=J (its entries) or subbuckets=true (their sums), not both") }
        let pendingSince = try options["pending_since"].map { raw in
            guard let since = Int64(raw), since >= 0 else { throw CouchError.badRequest("pending_since must be a sequence number, not '\(raw)'") }
            guard bucket == nil else { throw CouchError.badRequest("pending_since goes with the whole digest, not a bucket") }
            return since
        }
        if let bucket {
            var entries = try collection.digestEntries(inBucket: bucket)
            if sums {
                let subs = CollectionDigest.subBuckets(of: entries)
                return HTTP.json([
                    "bucket": .int(Int64(bucket)),
                    "subbuckets": .array(subs.map { ["count": .int(Int64($0.count)), "deleted": .int(Int64($0.deleted)), "hash": .string($0.hash)] }),
                ])
            }
            var answer: [String: DocumentValue] = ["bucket": .int(Int64(bucket))]
            if let sub {
                entries = entries.filter { CollectionDigest.subBucket(of: $0.id) == sub }
                answer["sub"] = .int(Int64(sub))
            }
            answer["entries"] = .array(entries.map { ["id": .string($0.id), "rev": .string($0.revisionID), "deleted": .bool($0.isDeleted)] })
            return HTTP.json(.dictionary(answer))
        }
        let digest = try collection.digest()
        var answer: [String: DocumentValue] = [
            "count": .int(Int64(digest.count)), "deleted": .int(Int64(digest.deletedCount)), "root": .string(digest.root),
        ]
        if let pendingSince { answer["pending"] = .int(Int64(try collection.changeCount(since: pendingSince))) }
        // `?buckets=false`: the root alone, for those who only ask "equal or not?" (sync status, often).
        if withBuckets {
            answer["buckets"] = .array(digest.buckets.map { ["count": .int(Int64($0.count)), "deleted": .int(Int64($0.deleted)), "hash": .string($0.hash)] })
        }
        return HTTP.json(.dictionary(answer))
    }
}
