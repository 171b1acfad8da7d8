import Foundation
import GRDB
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `syncnode sync` processes replicating with an in-process listener: the replicator's
/// conflict policy and checkpoints as the command line uses them.
@Suite(.serialized) struct SyncCommandTests {
    /// `run` for tests whose child talks to an in-process listener.
    static func runDetached(_ arguments: [String]) async throws -> (Int32, String, String) {
        try await ChildProcess.runDetached(try syncnodeExecutable(), arguments)
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

    /// Toward a peer that accepts connections and never answers, `sync` gives up within its
    /// `--timeout` and retries (not after minutes), saying which peer did not do what.
    @Test func syncTowardATarpitGivesUpSayingWhy() async throws {
        let (tarpit, port) = try Tarpit.open()
        defer { close(tarpit) }
        let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-tarpit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peer) }
        // Over TLS the wait is the connection's (TCP and handshake, 5 s): HTTPS peers fail there.
        for (scheme, says) in [("http", "sent nothing for 1 s"), ("https", "within 5 s")] {
            let started = ContinuousClock.now
            let (status, _, errors) = try await Self.runDetached(["--dir", peer.path, "sync", "\(scheme)://127.0.0.1:\(port)/db", "--timeout", "1"])
            let took = ContinuousClock.now - started
            #expect(status != 0)
            #expect(errors.contains("\(scheme)://127.0.0.1:\(port) ") && errors.contains(says), "\(errors)")
            // About a connect timeout and two seconds of retries; a loose bound for a shared machine.
            #expect(took < .seconds(60), "\(scheme): gave up after \(took)")
            print("sync toward a \(scheme) tarpit with --timeout 1: gave up after \(took)")
        }
        #expect(try await Self.runDetached(["--dir", peer.path, "sync", "http://127.0.0.1:\(port)/db", "--timeout", "0"]).0 != 0)
        // A port bound but not listening refuses connections: said so, not as a socket error's text.
        let closed = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(closed) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(closed, $0, length) == 0 && getsockname(closed, $0, &length) == 0
        } })
        let refused = try await Self.runDetached(["--dir", peer.path, "sync", "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/db", "--timeout", "1"])
        #expect(refused.0 != 0 && refused.2.contains("refused the connection (nothing listens on that port)"), "\(refused.2)")
    }

    /// Runs `syncnode sync URL --pull` into `peer` and kills it (-9) once `midway` holds;
    /// false when it finished first.
    static func killPull(into peer: URL, from url: URL, when midway: @escaping @Sendable () -> Bool) async throws -> Bool {
        let process = Process()
        process.executableURL = try syncnodeExecutable()
        process.arguments = ["--dir", peer.path, "sync", url.absoluteString, "--pull"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        // Watched from a thread of its own: a task polling on the shared pool waited its turn
        // past the whole pull when the whole suite ran on two cores.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                let deadline = Date().addingTimeInterval(120)
                // An exited process stays a zombie until Process reaps it; then kill(pid, 0) fails.
                while kill(pid, 0) == 0, Date() < deadline, !midway() { usleep(2_000) }
                kill(pid, SIGKILL)
                done.resume()
            }.start()
        }
        process.waitUntilExit()
        // Killed, not finished: the signal ended it.
        return process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
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

            // Midway by the bytes written: the file and its log together, since the background
            // checkpointer can keep the log alone short for the whole pull.
            let file = peer.appendingPathComponent("default.syncnode/db.sqlite3").path
            @Sendable func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
            let killedMidway = try await Self.killPull(into: peer, from: url) { size(file) + size(file + "-wal") > 3_000_000 }
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
