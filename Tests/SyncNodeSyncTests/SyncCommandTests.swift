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
    /// kill -9 of a `syncnode sync --pull` in the middle of a 200 MB attachment: no document
    /// and no blob under a real name is left, only a temporary file; a second pull completes
    /// with the content its digest names.
    @Test func aPullKilledInsideALargeAttachmentCompletesOnRestart() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-video-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
            let writer = try FileHandle(forWritingTo: file)
            // One megabyte made once (a debug build fills 200 slowly, on a thread other tests need), each copy numbered.
            var chunk = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 13) })
            for index in 0..<200 {
                chunk.replaceSubrange(0..<8, with: withUnsafeBytes(of: UInt64(index)) { Data($0) })
                try writer.write(contentsOf: chunk)
            }
            try writer.close()
            let video = MutableDocument(id: "video")
            video.setBlob(try Blob(contentType: "video/mp4", fileURL: file), forKey: "clip")
            try remote.save(video)
            let digest = try #require(try remote.document(id: "video")?.blob(forKey: "clip")?.digest)

            let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-killed-blob-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: peer) }
            let url = try ReplicatorTests.pairingURL(h)
            let process = Process()
            process.executableURL = try syncnodeExecutable()
            process.arguments = ["--dir", peer.path, "sync", url.absoluteString, "--pull"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let blobs = peer.appendingPathComponent("default.syncnode/blobs")
            func files() -> [(name: String, size: Int)] {
                ((try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []).map { name in
                    (name, ((try? FileManager.default.attributesOfItem(atPath: blobs.appendingPathComponent(name).path))?[.size] as? Int) ?? 0)
                }
            }
            let deadline = Date().addingTimeInterval(120)
            while process.isRunning, Date() < deadline, !files().contains(where: { $0.name.hasPrefix(".tmp-") && $0.size > 40 << 20 }) {
                try await Task.sleep(for: .milliseconds(5))
            }
            let killedMidway = process.isRunning
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(killedMidway, "the pull finished before it could be killed")
            let left = files()
            #expect(left.allSatisfy { $0.name.hasPrefix(".tmp-") }, "a blob under a real name after the kill: \(left)")

            let db = try Database(name: "default", config: DatabaseConfiguration(directory: peer))
            defer { try? db.close() }
            let local = try db.defaultCollection()
            #expect(try local.document(id: "video") == nil)
            var config = ReplicatorConfiguration(collection: local, target: .url(url))
            config.replicatorType = .pull
            #expect(try await Replicator(config: config).runOnce().pulled == 1)
            let blob = try #require(try local.document(id: "video")?.blob(forKey: "clip"))
            #expect(blob.digest == digest && blob.length == 200 << 20)
            let stored = try #require(local.blobFile(digest: digest))
            #expect(try Blob(contentType: "video/mp4", fileURL: stored).digest == digest, "the stored content is not what its digest names")
        }
    }
}
