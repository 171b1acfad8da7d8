import AsyncHTTPClient
import Foundation
import GRDB
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `syncnode sync` between two data directories through a `syncnode serve` process.
@Suite(.serialized) struct CLISyncTests {
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        try ChildProcess.run(try syncnodeExecutable(), arguments)
    }

    /// `run` for tests whose child talks to an in-process listener.
    static func runDetached(_ arguments: [String]) async throws -> (Int32, String, String) {
        try await ChildProcess.runDetached(try syncnodeExecutable(), arguments)
    }

    /// A newcomer's first commands print help and succeed.
    @Test(arguments: [["--help"], [], ["help"], ["serve", "--help"], ["help", "sync"], ["sync", "-h"]])
    func helpIsPrinted(_ arguments: [String]) throws {
        let (status, stdout, _) = try Self.run(arguments)
        #expect(status == 0)
        #expect(stdout.contains("USAGE: syncnode"), "\(arguments): \(stdout.prefix(200))")
    }

    /// Every command's help shows an example.
    @Test(arguments: [[], ["put"], ["get"], ["delete"], ["import"], ["export"], ["changes"], ["query"], ["serve"], ["sync"], ["peers"],
                      ["identity"], ["user"], ["user", "add"], ["user", "remove"], ["user", "list"], ["trust"], ["trust", "add"],
                      ["trust", "remove"], ["trust", "list"]])
    func helpShowsAnExample(_ command: [String]) throws {
        let (status, stdout, _) = try Self.run(command + ["--help"])
        #expect(status == 0)
        #expect(stdout.contains("USAGE: syncnode") && stdout.contains("Example"), "\(command): \(stdout.prefix(300))")
    }

    @Test func syncPullsAndPushesThroughAServeProcess() throws {
        let node = try PythonClientTests.Node(user: "u", password: "p w")
        defer { _ = node.stop() }
        let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peer) }
        for i in 0..<3 { #expect(try Self.run(["--dir", node.directory.path, "put", "default", "a\(i)", "{\"i\":\(i)}"]).0 == 0) }
        let identity = try Self.run(["--dir", node.directory.path, "identity"]).1
        let fingerprint = try #require(try DocumentValue(json: identity)["fingerprint"]?.string)
        let url = "https://u:p%20w@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"

        let pulled = try Self.run(["--dir", peer.path, "sync", url, "--pull"])
        #expect(pulled.0 == 0, "\(pulled.2)")
        let pulledCounts = try DocumentValue(json: pulled.1)
        #expect(pulledCounts["pulled"] == 3 && pulledCounts["pushed"] == 0)
        #expect(try Self.run(["--dir", peer.path, "get", "default", "a2"]).1.contains(#""i":2"#))

        #expect(try Self.run(["--dir", peer.path, "put", "default", "b", "{}"]).0 == 0)
        let both = try DocumentValue(json: try Self.run(["--dir", peer.path, "sync", url]).1)
        #expect(both["pushed"] == 1 && both["pulled"] == 0)
        #expect(try Self.run(["--dir", node.directory.path, "get", "default", "b"]).0 == 0)

        let refused = try Self.run(["--dir", peer.path, "sync", "https://u:wrong@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"])
        #expect(refused.0 == 1 && refused.2.contains("401"))
        let unreachable = try Self.run(["--dir", peer.path, "sync", "https://127.0.0.1:1/default", "--attempts", "2"])
        #expect(unreachable.0 == 3 && unreachable.2.split(separator: "\n").count == 1)
    }

    /// A browser page of an allowed origin may call the API with credentials (PouchDB with CORS); others get no CORS headers.
    @Test func serveAllowsTheCORSOriginsItIsGiven() async throws {
        let node = try PythonClientTests.Node(user: "u", password: "p", arguments: ["--cors-origin", "http://app.example:8080", "--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none  // not what this test is about
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(tlsConfiguration: tls))
        func preflight(_ origin: String) async throws -> HTTPHeaders {
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(node.port)/default/_changes")
            request.method = .OPTIONS
            request.headers.add(name: "Origin", value: origin)
            request.headers.add(name: "Access-Control-Request-Method", value: "GET")
            request.headers.add(name: "Access-Control-Request-Headers", value: "authorization,content-type")
            return try await client.execute(request, timeout: .seconds(10)).headers
        }
        do {
            let allowed = try await preflight("http://app.example:8080")
            #expect(allowed["Access-Control-Allow-Origin"] == ["http://app.example:8080"])
            #expect(allowed["Access-Control-Allow-Credentials"] == ["true"])
            #expect(allowed["Access-Control-Allow-Headers"].first?.contains("authorization") == true)
            #expect(try await preflight("http://evil.example")["Access-Control-Allow-Origin"].isEmpty)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        let bad = try Self.run(["serve", "--cors-origin", "ftp://x/y"])
        #expect(bad.0 != 0 && bad.2.contains("--cors-origin"))
    }

    /// `--conflicts keep` leaves a pulled conflict as CouchDB would; the default resolves it.
    @Test func conflictPolicyKeepLeavesConflicts() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let branches = #"{"new_edits":false,"docs":[{"_id":"d","_rev":"2-aaaa","v":"a","_revisions":{"start":2,"ids":["aaaa","1111"]}},"# +
                #"{"_id":"d","_rev":"2-bbbb","v":"b","_revisions":{"start":2,"ids":["bbbb","1111"]}}]}"#
            #expect(try await h.request(.POST, "/db/_bulk_docs", body: branches).status == 201)
            let fingerprint = try #require(h.listener.tlsIdentity?.fingerprint)
            let password = ListenerHarness.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let url = "\(h.base.replacingOccurrences(of: "https://", with: "https://\(ListenerHarness.user):\(password)@"))/db?fp=\(fingerprint)"
            for (policy, conflicts) in [("keep", 1), ("resolve", 0)] {
                let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-conflicts-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: peer) }
                let pulled = try await Self.runDetached(["--dir", peer.path, "sync", url, "--pull", "--conflicts", policy])
                #expect(pulled.0 == 0, "\(pulled.2)")
                let node = try NodeDirectory(url: peer)
                let collection = try #require(try node.database("default")?.defaultCollection())
                #expect(try collection.conflictingRevisions(id: "d").count == conflicts, "--conflicts \(policy)")
                #expect(try collection.document(id: "d")?.string(forKey: "v") == "b")  // the same winner either way
                node.closeAll()
            }
            #expect(try await Self.runDetached(["sync", url, "--conflicts", "maybe"]).0 != 0)
        }
    }

    /// kill -9 of a `syncnode sync --pull` in the middle of 20,000 documents,
    /// then a resumed pull: complete, intact, and at most one batch examined again.
    @Test func aKilledPullResumesFromItsCheckpoint() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let total = 20_000
            try remote.database.inBatch {
                for i in 0..<total {
                    try remote.save(try MutableDocument(id: "doc-\(i)", data: ["n": i, "text": String(repeating: "x", count: 300)]))
                }
            }
            let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-killed-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: peer) }
            let url = try ReplicatorTests.pairingURL(h)

            let process = Process()
            process.executableURL = try syncnodeExecutable()
            process.arguments = ["--dir", peer.path, "sync", url.absoluteString, "--pull"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let wal = peer.appendingPathComponent("default.syncnode/db.sqlite3-wal").path
            let deadline = Date().addingTimeInterval(120)
            while process.isRunning, Date() < deadline {
                let size = ((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) ?? 0
                if size > 1_500_000 { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            let killedMidway = process.isRunning
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(killedMidway, "the pull finished before it could be killed")

            let db = try Database(name: "default", config: DatabaseConfiguration(directory: peer))
            defer { try? db.close() }
            #expect(try db.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
            let local = try db.defaultCollection()
            let before = try local.count
            #expect(before > 0 && before < total, "killed with \(before) documents pulled")

            var config = ReplicatorConfiguration(collection: local, target: .url(url))
            config.replicatorType = .pull
            let resumed = Replicator(config: config)
            #expect(try await resumed.runOnce().pulled == total - before)
            #expect(try local.count == total)
            let examined = resumed.status.progress.completed
            #expect(examined <= total - before + config.batchSize, "examined \(examined) changes again for \(total - before) missing")
        }
    }
}
