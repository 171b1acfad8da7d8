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
            #expect(digest["count"]?.int == 40 && digest["deleted"]?.int == 1 && digest["root"]?.string == stored.root)

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
            #expect(try await h.request(.POST, "/db/_digest", body: "{}").status == 405)
            #expect(try await h.request(.GET, "/nope/_digest").status == 404)
        }
    }
}
