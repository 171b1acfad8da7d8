import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A collection's validator refuses writes from the wire, per document, and pulled revisions
/// without stopping the replication.
@Suite struct ValidationTests {
    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// Documents need a `title`; the author must be signed in.
    static let validator = DocumentValidator { proposed, _, author in
        if author.origin == .client, author.name == nil { throw Refused(description: "sign in to write") }
        if !proposed.isDeleted, proposed.string(forKey: "title") == nil { throw Refused(description: "a title is required") }
    }

    @Test func clientsWritesAreCheckedOnePerDocument() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let collection = try #require(try h.node.database("db")).defaultCollection()
            let authors = Mutex<[WriteAuthor]>([])
            collection.setValidator(DocumentValidator { proposed, current, author in
                authors.withLock { $0.append(author) }
                try Self.validator.validate(proposed, current, author)
            })
            let refused = try await h.request(.PUT, "/db/a", body: #"{"v":1}"#)
            #expect(refused.status == 403 && refused["error"] == "forbidden" && refused["reason"] == "a title is required")
            #expect(try await h.request(.PUT, "/db/a", body: #"{"title":"ok"}"#).status == 201)
            #expect(authors.withLock { $0.last } == WriteAuthor(name: ListenerHarness.user, roles: ["_admin"], origin: .client))

            let bulk = try await h.request(.POST, "/db/_bulk_docs", body: #"{"docs":[{"_id":"b","title":"x"},{"_id":"c"},{"_id":"d","title":"y"}]}"#)
            #expect(bulk.status == 201)
            let results = try #require(bulk.json.array)
            #expect(results.count == 3)
            #expect(results[0]["ok"] == true && results[2]["ok"] == true)
            #expect(results[1]["id"] == "c" && results[1]["error"] == "forbidden" && results[1]["reason"] == "a title is required")
            // Replicated revisions (new_edits=false) are checked as well.
            let replicated = try await h.request(.POST, "/db/_bulk_docs",
                                                 body: #"{"new_edits":false,"docs":[{"_id":"e","_rev":"1-abc"},{"_id":"f","_rev":"1-abd","title":"z"}]}"#)
            let entries = try #require(replicated.json.array)
            #expect(entries.count == 1 && entries[0]["id"] == "e" && entries[0]["error"] == "forbidden")
            for id in ["a", "b", "d", "f"] { #expect(try collection.document(id: id) != nil, "\(id)") }
            // A replication the node runs on a client's behalf writes as that client.
            _ = try await h.request(.PUT, "/src")
            _ = try await h.request(.PUT, "/src/g", body: #"{"title":"g"}"#)
            #expect(try await h.request(.POST, "/_replicate", body: #"{"source":"src","target":"db"}"#).status == 200)
            #expect(authors.withLock { $0.last } == WriteAuthor(name: ListenerHarness.user, roles: ["_admin"], origin: .client))
            for id in ["c", "e"] { #expect(try collection.document(id: id) == nil, "\(id)") }
        }
    }

    @Test func aPullReportsRejectedDocumentsAndGoesOn() async throws {
        let h = try await ListenerHarness()
        let peerDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-validate-\(UUID().uuidString)")
        let peer = try NodeDirectory(url: peerDirectory)
        try await withCleanup({
            peer.closeAll()
            try? FileManager.default.removeItem(at: peerDirectory)
            await h.shutdown()
        }) {
            _ = try await h.request(.PUT, "/db")
            for i in 0..<6 {
                _ = try await h.request(.PUT, "/db/d\(i)", body: i % 3 == 0 ? #"{"v":1}"# : #"{"title":"t"}"#)
            }
            let collection = try #require(try peer.database("db", create: true)).defaultCollection()
            let origins = Mutex<[WriteAuthor.Origin]>([])
            collection.setValidator(DocumentValidator { proposed, current, author in
                origins.withLock { $0.append(author.origin) }
                try Self.validator.validate(proposed, current, author)
            })
            let password = ListenerHarness.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let url = try #require(URL(string: h.base.replacingOccurrences(of: "https://", with: "https://\(ListenerHarness.user):\(password)@")
                + "/db?fp=\(try h.node.tlsIdentity().fingerprint)"))
            var config = ReplicatorConfiguration(collection: collection, target: .url(url))
            config.replicatorType = .pull
            let replicator = Replicator(config: config)
            let refusals = Mutex<[String: CouchError]>([:])
            let token = replicator.addDocumentReplicationListener { batch in
                for doc in batch.documents { if let error = doc.error as? CouchError { refusals.withLock { $0[doc.id] = error } } }
            }
            defer { token.remove() }
            let result = try await replicator.runOnce()
            #expect(replicator.status.error == nil)
            #expect(result.pulled == 4)
            #expect(try collection.count == 4)
            let refused = refusals.withLock { $0 }
            #expect(Set(refused.keys) == ["d0", "d3"])
            #expect(refused["d0"]?.status == 403 && refused["d0"]?.reason == "a title is required")
            let peerUUID = try await h.request(.GET, "/")["uuid"]?.string ?? ""
            #expect(origins.withLock { $0 }.allSatisfy { $0 == .replication(peer: "\(peerUUID)/db") })
        }
    }
}
