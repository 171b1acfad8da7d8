import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// CouchDB's replicator with a `selector` or `doc_ids`, from a node and to one: exactly the
/// matching documents cross. From a node, the node's listener does the filtering
/// (`_changes?filter=_selector`); to a node, CouchDB does.
@Suite(.serialized, Interop.couchDB)
struct CouchDBSelectorTests {
    @Test func couchDBReplicatesWhatASelectorMatchesBothWays() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness()
        let target = "interop_selector_\(UUID().uuidString.prefix(8).lowercased())"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(target) }) {
            try await SelectorFeedTests.fill(h)
            let fromNode = try await couch.replicate(
                source: h.replicationEndpoint("db"), target: couch.endpoint(target), createTarget: true,
                options: ["selector": ["type": "order"]])
            #expect(fromNode["ok"] == true, "\(fromNode)")
            #expect(try await Self.ids(couch, target) == SelectorFeedTests.orders.sorted())

            // doc_ids, from a node too.
            let byID = try await couch.replicate(
                source: h.replicationEndpoint("db"), target: couch.endpoint(target), options: ["doc_ids": ["d7", "d8"]])
            #expect(byID["ok"] == true, "\(byID)")
            #expect(try await Self.ids(couch, target) == (SelectorFeedTests.orders + ["d7", "d8"]).sorted())

            // CouchDB -> a node: only CouchDB's documents that match land in a fresh database.
            #expect(try await h.request(.PUT, "/fresh").status == 201)
            let toNode = try await couch.replicate(
                source: couch.endpoint(target), target: h.replicationEndpoint("fresh"), options: ["selector": ["store": "s2"]])
            #expect(toNode["ok"] == true, "\(toNode)")
            let fresh = try await h.request(.GET, "/fresh/_all_docs")
            let expected = SelectorFeedTests.orders.filter { (Int($0.dropFirst()) ?? 0) % 3 == 2 }
            #expect(fresh["rows"]?.array?.compactMap { $0["id"]?.string }.sorted() == expected.sorted())
        }
    }

    static func ids(_ couch: CouchDB, _ db: String) async throws -> [String] {
        let all = try await couch.request(.GET, "/\(db)/_all_docs")
        return try #require(all["rows"]?.array).compactMap { $0["id"]?.string }.sorted()
    }
}
