import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A node compared with a real CouchDB, which has no `_digest`: its `_changes` feed is read and
/// the digest computed from it must match the node's own after CouchDB's replicator copied it.
@Suite(.serialized, Interop.couchDB)
struct CouchDBDigestTests {
    @Test func aNodeAndCouchDBCompareEqualThenDifferInOneDocument() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness()
        let target = "interop_digest_\(UUID().uuidString.prefix(8).lowercased())"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(target) }) {
            try await CouchDBInteropTests.fillNode(h, db: "source")
            let copied = try await couch.replicate(source: h.replicationEndpoint("source"), target: couch.endpoint(target), createTarget: true)
            #expect(copied["ok"] == true, "\(copied)")
            let local = try #require(try h.node.database("source")).defaultCollection()
            let raw = try #require(ProcessInfo.processInfo.environment["SYNCNODE_COUCHDB_URL"])
            let remote = try await RemoteDigest.connect(url: try #require(URL(string: "\(raw)/\(target)")))
            let same = try await DigestComparison.compare(local, remote)
            #expect(same.equal, "\(same.differences)")
            #expect(await remote.readChangesInstead)
            #expect(try same.b.count == same.a.count && same.a.count == local.count)
            await remote.shutdown()

            let rev = try #require(try await couch.request(.GET, "/\(target)/plain-5")["_rev"]?.string)
            #expect(try await couch.request(.PUT, "/\(target)/plain-5", body: #"{"n":-5,"_rev":"\#(rev)"}"#).status == 201)
            let again = try await RemoteDigest.connect(url: try #require(URL(string: "\(raw)/\(target)")))
            let differ = try await DigestComparison.compare(local, again)
            await again.shutdown()
            #expect(!differ.equal)
            #expect(differ.differences.map(\.id) == ["plain-5"])
            #expect(differ.differences.first?.a?.revisionID.hasPrefix("1-") == true && differ.differences.first?.b?.revisionID.hasPrefix("2-") == true)
        }
    }
}
