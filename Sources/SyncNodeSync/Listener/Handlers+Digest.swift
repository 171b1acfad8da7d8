import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `GET /{keyspace}/_digest`: the collection's ``CollectionDigest`` (`count`, `deleted`,
    /// `root`, and 256 `buckets` of `{count, deleted, hash}`); `?buckets=false` leaves the buckets out; `?bucket=K` lists that bucket's
    /// entries instead, `{id, rev, deleted}` sorted by ID. Two nodes with equal roots hold the
    /// same documents at the same winning revisions; where buckets differ, their entries say
    /// which documents differ.
    func digest(_ request: Request, collection: DocumentCollection) throws -> Response {
        let options = QueryOptions(request.uri)
        if let raw = options["bucket"] {
            guard let bucket = Int(raw), (0..<CollectionDigest.bucketCount).contains(bucket) else {
                throw CouchError.badRequest("bucket must be a whole number from 0 to \(CollectionDigest.bucketCount - 1), not '\(raw)'")
            }
            let entries = try collection.digestEntries(inBucket: bucket)
            return HTTP.json([
                "bucket": .int(Int64(bucket)),
                "entries": .array(entries.map { ["id": .string($0.id), "rev": .string($0.revisionID), "deleted": .bool($0.isDeleted)] }),
            ])
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
