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

    /// `syncnode sync --selector` against CouchDB: a pull asks CouchDB's feed for the matches, a
    /// push sends only the local matches; a selector CouchDB would refuse stops it before it starts.
    @Test func syncnodeSyncWithASelectorBothWaysWithCouchDB() async throws {
        let couch = try CouchDB()
        let db = "interop_sync_selector_\(UUID().uuidString.prefix(8).lowercased())"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-selector-\(UUID().uuidString)")
        try await withCleanup({ await couch.shutdown(db); try? FileManager.default.removeItem(at: dir) }) {
            #expect(try await couch.request(.PUT, "/\(db)").status == 201)
            let docs: [DocumentValue] = (0..<300).map { i in ["_id": .string("c\(i)"), "type": i % 10 == 0 ? "order" : "note"] }
            #expect(try await couch.request(.POST, "/\(db)/_bulk_docs", body: (["docs": .array(docs)] as DocumentValue).toJSON()).status == 201)
            let url = try #require(ProcessInfo.processInfo.environment["SYNCNODE_COUCHDB_URL"]) + "/\(db)"
            let pulled = try await SyncCommandTests.runDetached(["--dir", dir.path, "sync", url, "--pull", "--selector", #"{"type":"order"}"#])
            #expect(pulled.0 == 0, "\(pulled.2)")
            #expect(try DocumentValue(json: pulled.1.split(separator: "\n").last.map(String.init) ?? "")["pulled"] == 30)

            let node = try NodeDirectory(url: dir)
            let local = try #require(try node.database("default")?.defaultCollection())
            #expect(try SelectiveReplicationTests.ids(local) == (0..<30).map { "c\($0 * 10)" }.sorted())
            for i in 0..<6 { try local.save(try MutableDocument(id: "n\(i)", data: ["type": i < 2 ? "order" : "note"])) }
            node.closeAll()
            let pushed = try await SyncCommandTests.runDetached(["--dir", dir.path, "sync", url, "--push", "--selector", #"{"type":"order"}"#])
            #expect(pushed.0 == 0, "\(pushed.2)")
            let held = try await Self.ids(couch, db)
            #expect(held.contains("n0") && held.contains("n1") && !held.contains("n2") && held.count == 302)

            let bad = try await SyncCommandTests.runDetached(["--dir", dir.path, "sync", url, "--selector", #"{"type":{"$near":1}}"#])
            #expect(bad.0 != 0 && bad.2.contains("$near"), "\(bad.2)")
            let notObject = try await SyncCommandTests.runDetached(["--dir", dir.path, "sync", url, "--selector", "order"])
            #expect(notObject.0 != 0 && notObject.2.contains("--selector"), "\(notObject.2)")
        }
    }

    static func ids(_ couch: CouchDB, _ db: String) async throws -> [String] {
        let all = try await couch.request(.GET, "/\(db)/_all_docs")
        return try #require(all["rows"]?.array).compactMap { $0["id"]?.string }.sorted()
    }
}
