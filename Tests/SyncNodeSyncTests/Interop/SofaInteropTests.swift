import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// The replicator against django-sofa (PyPI): an independently written
/// CouchDB-replication endpoint over Django models. It only makes `1-`
/// revisions, has no attachments, no `_ensure_full_commit` and keeps
/// PouchDB-shaped checkpoints: a basic stranger check.
@Suite(.serialized, Interop.pythonClients) struct SofaInteropTests {
    @Test func pullsFromAndPushesToDjangoSofa() async throws {
        let python = Interop.python
        let server = Process()
        server.executableURL = python
        server.arguments = [packageRoot.appendingPathComponent("Tests/interop/sofa_site/serve_sofa.py").path]
        let out = Pipe(), err = Pipe()
        server.standardOutput = out
        server.standardError = err
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        let line = ServeProcess.firstLine(of: server, output: out)
        guard line.hasPrefix("port "), let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            server.terminate()
            let stderr = String(decoding: PipeIO.readToEnd(err.fileHandleForReading), as: UTF8.self)
            Issue.record("django-sofa did not start: \(line) \(stderr)")
            return
        }
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/db"))

        let peer = try ReplicatorTests.Peer()
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(url))
        config.maxAttempts = 2
        config.replicatorType = .pull
        #expect(try await Replicator(config: config).runOnce().pulled == 2)
        #expect(try peer.collection.document(id: "note:a")?.string(forKey: "title") == "from django")
        #expect(try peer.collection.document(id: "note:b")?.boolean(forKey: "done") == true)
        #expect(try await Replicator(config: config).runOnce().pulled == 0, "its checkpoint shape is understood")

        try peer.collection.save(try MutableDocument(id: "note:c", data: ["title": "from swift", "done": false]))
        config.replicatorType = .push
        #expect(try await Replicator(config: config).runOnce().pushed == 1)

        // Read back through the protocol into a fresh node: Django stored the pushed note.
        let fresh = try ReplicatorTests.Peer()
        var back = ReplicatorConfiguration(collection: fresh.collection, target: .url(url))
        back.replicatorType = .pull
        #expect(try await Replicator(config: back).runOnce().pulled == 3)
        #expect(try fresh.collection.document(id: "note:c")?.string(forKey: "title") == "from swift")
    }
}
