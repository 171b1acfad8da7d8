import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct DigestEndpointTests {
    @Test func theDigestAndItsBucketsOverHTTP() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let empty = try await h.request(.GET, "/db/_digest")
            #expect(empty.status == 200 && empty["count"]?.int == 0 && empty["buckets"]?.array?.count == 256)
            #expect(empty["root"]?.string == CollectionDigest(entries: []).root)

            for i in 0..<40 { #expect(try await h.request(.PUT, "/db/doc-\(i)", body: #"{"i":\#(i)}"#).status == 201) }
            let gone = try await h.request(.GET, "/db/doc-5")
            #expect(try await h.request(.DELETE, "/db/doc-5?rev=\(gone["_rev"]?.string ?? "")").status == 200)
            let digest = try await h.request(.GET, "/db/_digest")
            let collection = try #require(try h.node.database("db")).defaultCollection()
            let stored = try collection.digest()
            #expect(digest["count"]?.int == 39 && digest["deleted"]?.int == 0 && digest["root"]?.string == stored.root)

            // Every bucket's entries over HTTP rebuild the same digest.
            var entries: [CollectionDigest.Entry] = []
            for bucket in 0..<256 where stored.buckets[bucket].count > 0 {
                let listed = try await h.request(.GET, "/db/_digest?bucket=\(bucket)")
                #expect(listed["bucket"]?.int == Int64(bucket))
                for entry in listed["entries"]?.array ?? [] {
                    entries.append(CollectionDigest.Entry(
                        id: entry["id"]?.string ?? "", revisionID: entry["rev"]?.string ?? "", isDeleted: entry["deleted"] == .bool(true)))
                }
            }
            #expect(CollectionDigest(entries: entries) == stored)

            let bad = try await h.request(.GET, "/db/_digest?bucket=256")
            #expect(bad.status == 400 && bad["error"]?.string == "bad_request")
            #expect(try await h.request(.GET, "/db/_digest?bucket=x").status == 400)

            // With the changes after a sequence, as a sync check asks (41 changes: 40 saves, 1 deletion).
            let since = try await h.request(.GET, "/db/_digest?buckets=false&pending_since=30")
            #expect(since["pending"]?.int == 11 && since["root"]?.string == stored.root && since["buckets"] == nil)
            #expect(try await h.request(.GET, "/db/_digest?buckets=false&pending_since=41")["pending"]?.int == 0)
            #expect(try await h.request(.GET, "/db/_digest")["pending"] == nil)
            for bad in ["pending_since=x", "pending_since=-1", "bucket=3&pending_since=0"] {
                #expect(try await h.request(.GET, "/db/_digest?\(bad)").status == 400, "\(bad)")
            }
            // A changes feed asked for it ends with the root after its rows; others carry none.
            let feed = try await h.request(.GET, "/db/_changes?feed=longpoll&since=30&digest=true")
            #expect(feed["digest"]?.string == stored.root && feed["results"]?.array?.count == 11, "\(feed)")
            #expect(try await h.request(.GET, "/db/_changes?since=30")["digest"] == nil)
            #expect(try await h.request(.GET, "/db/_changes?digest=maybe").status == 400)
            #expect(try await h.request(.POST, "/db/_digest", body: "{}").status == 405)
            #expect(try await h.request(.GET, "/nope/_digest").status == 404)
        }
    }
}

extension DigestEndpointTests {
    /// A bucket that differs is drilled into by its sub-buckets: only the differing sub-buckets'
    /// entries are listed, and the differences found are exactly the documents changed.
    @Test func aDifferingBucketIsComparedByItsSubBuckets() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            // The same 300 revisions in both databases (new_edits=false keeps the revision IDs).
            let docs = (0..<300).map { #"{"_id":"doc-\#($0)","_rev":"1-\#(String(repeating: "a", count: 31))\#($0 % 10)","i":\#($0)}"# }
            for db in ["left", "right"] {
                #expect(try await h.request(.PUT, "/\(db)").status == 201)
                #expect(try await h.request(.POST, "/\(db)/_bulk_docs", body: #"{"new_edits":false,"docs":[\#(docs.joined(separator: ","))]}"#).status == 201)
            }
            let edited = try await h.request(.GET, "/right/doc-7")
            #expect(try await h.request(.PUT, "/right/doc-7", body: #"{"_rev":"\#(edited["_rev"]?.string ?? "")","i":-7}"#).status == 201)
            let gone = try await h.request(.GET, "/right/doc-8")
            #expect(try await h.request(.DELETE, "/right/doc-8?rev=\(gone["_rev"]?.string ?? "")").status == 200)
            #expect(try await h.request(.PUT, "/right/only-right", body: "{}").status == 201)

            // The summaries served are the sums of the bucket's entries.
            let left = try #require(try h.node.database("left")).defaultCollection()
            let bucket = CollectionDigest.bucket(of: "doc-7")
            let summary = try await h.request(.GET, "/left/_digest?bucket=\(bucket)&subbuckets=true")
            let expected = CollectionDigest.subBuckets(of: try left.digestEntries(inBucket: bucket))
            #expect(summary["subbuckets"]?.array?.count == 256)
            #expect(summary["subbuckets"]?.array?.map { $0["hash"]?.string ?? "" } == expected.map(\.hash))
            let sub = CollectionDigest.subBucket(of: "doc-7")
            let listed = try await h.request(.GET, "/left/_digest?bucket=\(bucket)&sub=\(sub)")
            #expect(listed["entries"]?.array?.contains { $0["id"]?.string == "doc-7" } == true)
            #expect(listed["entries"]?.array?.allSatisfy { CollectionDigest.subBucket(of: $0["id"]?.string ?? "") == sub } == true)
            #expect(try await h.request(.GET, "/left/_digest?bucket=\(bucket)&sub=999").status == 400)
            // A wrong option is refused, never ignored.
            for bad in ["sub=1", "subbuckets=true", "bucket=1&sub=1&subbuckets=true", "bucket=1&subbuckets=maybe", "buckets=perhaps"] {
                let refused = try await h.request(.GET, "/left/_digest?\(bad)")
                #expect(refused.status == 400 && refused["error"]?.string == "bad_request", "\(bad)")
            }
            #expect(try await h.request(.GET, "/left/_digest?buckets=false")["buckets"] == nil)

            // Local against remote and remote against remote, through the sub-buckets.
            let url = try #require(URL(string: "\(h.base.replacingOccurrences(of: "://", with: "://\(ListenerHarness.user):s3cret%3Apa$$@"))/right?fp=\(try h.node.tlsIdentity().fingerprint)"))
            for source in ["local", "remote"] {
                let right = try await RemoteDigest.connect(url: url)
                let other = try await RemoteDigest.connect(url: url, keyspace: "left")
                let outcome = source == "local"
                    ? try await DigestComparison.compare(left, right, listingUpTo: 0)
                    : try await DigestComparison.compare(other, right, listingUpTo: 0)
                #expect(outcome.differences.map(\.id) == ["doc-7", "doc-8", "only-right"], "\(source)")
                // Deleted on the right: no entry there, as digests leave tombstones out.
                #expect(outcome.differences.first { $0.id == "doc-8" }.map { $0.a != nil && $0.b == nil } == true)
                #expect(outcome.differences.first { $0.id == "only-right" }?.a == nil)
                // Beyond the digest: three buckets' 256 sub-bucket sums (at least 40 bytes each) and three
                // small sub-bucket listings; listing the three buckets whole would read far less here.
                let digestOnly = try await RemoteDigest.connect(url: url)
                _ = try await digestOnly.digest()
                let drilled = await right.bytesReceived - digestOnly.bytesReceived
                await digestOnly.shutdown()
                #expect(drilled >= 3 * 256 * 40 && drilled < 3 * 20_000, "\(drilled)")
                await right.shutdown()
                await other.shutdown()
            }
        }
    }
}
