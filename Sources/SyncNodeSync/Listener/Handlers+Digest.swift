import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `GET /{keyspace}/_digest`: the collection's ``CollectionDigest`` (`count`, `deleted`,
    /// `root`, and 256 `buckets` of `{count, deleted, hash}`); `?buckets=false` leaves the buckets out; `?bucket=K` lists that bucket's
    /// entries instead, `&sub=J` only those of its sub-bucket J, and `&subbuckets=true` sums them
    /// into 256 sub-buckets (``CollectionDigest/subBuckets(of:)``) instead, `{id, rev, deleted}` sorted by ID. Two nodes with equal roots hold the
    /// same documents at the same winning revisions; where buckets differ, their entries say
    /// which documents differ.
    func digest(_ request: Request, collection: DocumentCollection) throws -> Response {
        let options = QueryOptions(request.uri)
        if let raw = options["bucket"] {
            guard let bucket = Int(raw), (0..<CollectionDigest.bucketCount).contains(bucket) else {
                throw CouchError.badRequest("bucket must be a whole number from 0 to \(CollectionDigest.bucketCount - 1), not '\(raw)'")
            }
            var entries = try collection.digestEntries(inBucket: bucket)
            if try options.bool("subbuckets") {
                let subs = CollectionDigest.subBuckets(of: entries)
                return HTTP.json([
                    "bucket": .int(Int64(bucket)),
                    "subbuckets": .array(subs.map { ["count": .int(Int64($0.count)), "deleted": .int(Int64($0.deleted)), "hash": .string($0.hash)] }),
                ])
            }
            var answer: [String: DocumentValue] = ["bucket": .int(Int64(bucket))]
            if let raw = options["sub"] {
                guard let sub = Int(raw), (0..<CollectionDigest.bucketCount).contains(sub) else {
                    throw CouchError.badRequest("sub must be a whole number from 0 to \(CollectionDigest.bucketCount - 1), not '\(raw)'")
                }
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
        // `?buckets=false`: the root alone, for those who only ask "equal or not?" (sync status, often).
        if try options.bool("buckets", default: true) {
            answer["buckets"] = .array(digest.buckets.map { ["count": .int(Int64($0.count)), "deleted": .int(Int64($0.deleted)), "hash": .string($0.hash)] })
        }
        return HTTP.json(.dictionary(answer))
    }
}
