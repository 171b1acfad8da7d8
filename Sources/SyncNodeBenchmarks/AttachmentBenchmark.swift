import Foundation
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks attachments [MB]`: large attachments end to end, whole processes,
/// each process's peak RSS printed against the 100 MB target.
///
/// 1. A blob of MB mebibytes (default 1024) saved from a file (a child process), pushed by
///    `syncnode sync --push` to a second node (`syncnode serve`), then pulled from it into a
///    third by `syncnode sync --pull`.
/// 2. 1,000 documents with a 100 KB attachment each (all different), pulled: documents/s and
///    MB/s against a `cp -r` of the same blob files on this disk, and the rate against 1.'s pull
///    (target: at least 60% of it). Both rates are of the replications' own time, which `sync`
///    reports: a process's start (linking, a new node's identity, opening its database) costs
///    the same 0.1 s or so whatever it pulls, and would count against the shorter pull alone.
///    The share of whole-process times is printed beside it.
/// 3. 100 documents with attachments of 10 KB to 20 MB pushed to a node whose JSON body limit
///    is 8 MB: every one must arrive, with its digest.
enum AttachmentBenchmark {
    static func run(megabytes: Int) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-att-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let cli = try NodeProcess.cli()
        let blobPull = try largeBlob(megabytes: megabytes, cli: cli, root: root)
        try manySmall(cli: cli, root: root, blobPull: blobPull)
        try await mixedBatch(cli: cli, root: root)
    }

    /// The target for every process, whatever the attachment's size.
    private static let rssTarget = 100.0

    private static func verdict(_ peaks: [Double]) -> String {
        (peaks.max() ?? 0) <= rssTarget ? "met" : "MISSED"
    }

    /// Returns the pull's rate in MB/s: of its replication's own time, and of its whole process.
    private static func largeBlob(megabytes: Int, cli: URL, root: URL) throws -> (replication: Double, process: Double) {
        let file = root.appendingPathComponent("large.bin")
        try writeFile(file, bytes: megabytes << 20, seed: 1)
        // Rates in MB of 10^6 bytes, as the small attachments' below: the blob is MB × 2^20 bytes.
        let mb = Double(megabytes << 20) / 1e6
        print("attachments benchmark 1: a \(megabytes) MiB blob saved from a file, pushed to node B, pulled from B into node C")
        let save = try NodeProcess.run(URL(fileURLWithPath: CommandLine.arguments[0]),
                                       ["save-blob", root.appendingPathComponent("a").path, file.path])
        guard save.status == 0 else { throw SyncError.listenerFailed("save-blob exited \(save.status)") }
        let serve = try NodeProcess.Server(cli: cli, dir: root.appendingPathComponent("b"), arguments: [])
        defer { serve.stop() }
        let push = try NodeProcess.run(cli, ["--dir", root.appendingPathComponent("a").path, "sync", serve.url, "--push"])
        let pushed = try push.syncReport().pushed
        let peakAfterPush = serve.peakRSS
        let pull = try NodeProcess.run(cli, ["--dir", root.appendingPathComponent("c").path, "sync", serve.url, "--pull"])
        let (_, pulled, pullSeconds) = try pull.syncReport()
        let peakServe = serve.peakRSS
        guard pushed == 1, pulled == 1 else { throw SyncError.listenerFailed("self-check: pushed \(pushed), pulled \(pulled)") }
        try check(digestOf: file, in: root.appendingPathComponent("c"))
        print(String(format: "  save from file  %7.1f MB/s (%.2f s)   peak RSS %5.0f MB", mb / save.seconds, save.seconds, save.peakRSS))
        print(String(format: "  push A -> B     %7.1f MB/s (%.2f s)   peak RSS %5.0f MB (sync), node B %5.0f MB", mb / push.seconds, push.seconds, push.peakRSS, peakAfterPush))
        print(String(format: "  pull B -> C     %7.1f MB/s (%.2f s; process %.2f s)   peak RSS %5.0f MB (sync), node B %5.0f MB",
                     mb / pullSeconds, pullSeconds, pull.seconds, pull.peakRSS, peakServe))
        let peaks = [save.peakRSS, push.peakRSS, pull.peakRSS, peakServe]
        print(String(format: "  peak RSS of every process <= %.0f MB: %@ (largest %.0f MB)", rssTarget, verdict(peaks), peaks.max() ?? 0))
        return (mb / pullSeconds, mb / pull.seconds)
    }

    /// Target: the small ones pull at least this share of the large blob's pull rate (`blobPull`, MB/s).
    private static let smallPullShare = 0.6

    private static func manySmall(cli: URL, root: URL, blobPull: (replication: Double, process: Double)) throws {
        let count = 1000, size = 100_000
        let node = try NodeDirectory(url: root.appendingPathComponent("d"))
        guard let source = try node.database("default", create: true)?.defaultCollection() else { throw SyncError.listenerFailed("no source") }
        let contents = (0..<count).map { pseudoRandom(size, seed: UInt64(2 * $0 + 11)) }
        let start = DispatchTime.now().uptimeNanoseconds
        try source.database.inBatch {
            for i in 0..<count {
                let doc = MutableDocument(id: "photo-\(i)")
                doc.setBlob(Blob(contentType: "image/jpeg", data: contents[i]), forKey: "photo")
                try source.save(doc)
            }
        }
        let savedSeconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        node.closeAll()
        print("attachments benchmark 2: \(count) documents with a \(size / 1000) KB attachment each, pulled (node D serve -> node E sync --pull)")
        print(String(format: "  saved in one batch  %7.0f docs/s  %7.1f MB/s (%.2f s)", Double(count) / savedSeconds, Double(count * size) / 1e6 / savedSeconds, savedSeconds))
        let serve = try NodeProcess.Server(cli: cli, dir: root.appendingPathComponent("d"), arguments: [])
        defer { serve.stop() }
        let pull = try NodeProcess.run(cli, ["--dir", root.appendingPathComponent("e").path, "sync", serve.url, "--pull"])
        let (_, pulled, pullSeconds) = try pull.syncReport()
        guard pulled == count else { throw SyncError.listenerFailed("self-check: pulled \(pulled)") }
        let blobs = root.appendingPathComponent("d/default.syncnode/blobs")
        let copy = try NodeProcess.run(URL(fileURLWithPath: "/bin/cp"), ["-r", blobs.path, root.appendingPathComponent("cp").path])
        guard copy.status == 0 else { throw SyncError.listenerFailed("cp exited \(copy.status)") }
        let mb = Double(count * size) / 1e6
        print(String(format: "  pull  %7.0f docs/s  %7.1f MB/s (%.2f s; process %.2f s)   peak RSS %3.0f MB (sync), node D %3.0f MB",
                     Double(count) / pullSeconds, mb / pullSeconds, pullSeconds, pull.seconds, pull.peakRSS, serve.peakRSS))
        print(String(format: "  cp -r %7.0f files/s %7.1f MB/s (%.2f s)   ratio (pull / cp) %.1f",
                     Double(count) / copy.seconds, mb / copy.seconds, copy.seconds, pull.seconds / copy.seconds))
        let share = mb / pullSeconds / blobPull.replication
        print(String(format: "  pull rate / the large blob's pull rate %.2f (target >= %.2f: %@); of whole processes %.2f",
                     share, smallPullShare, share >= smallPullShare ? "met" : "MISSED", mb / pull.seconds / blobPull.process))
    }

    private static func mixedBatch(cli: URL, root: URL) async throws {
        let count = 100
        let source = try NodeDirectory(url: root.appendingPathComponent("f"))
        guard let collection = try source.database("default", create: true)?.defaultCollection() else { throw SyncError.listenerFailed("no source") }
        var digests: [String: String] = [:]
        var total = 0
        for i in 0..<count {
            // Sizes spread evenly on a log scale from 10 KB to 20 MB.
            let size = Int(10_000 * pow(2000, Double(i) / Double(count - 1)))
            let doc = MutableDocument(id: "doc-\(i)")
            let blob = Blob(contentType: "application/octet-stream", data: pseudoRandom(size, seed: UInt64(i + 5000)))
            doc.setBlob(blob, forKey: "file")
            try collection.save(doc)
            digests[doc.id] = blob.digest
            total += size
        }
        source.closeAll()
        let target = try NodeDirectory(url: root.appendingPathComponent("g"))
        _ = try target.database("default", create: true)
        var config = ListenerConfiguration(directory: target, host: "127.0.0.1", disableTLS: true)
        config.maxRequestBodySize = 8 << 20
        let listener = Listener(config: config)
        try await listener.start()
        defer { target.closeAll() }
        guard let port = listener.port else { throw SyncError.listenerFailed("no port") }
        print(String(format: "attachments benchmark 3: %d documents, attachments 10 KB to 20 MB (%.0f MB), pushed to a node with an 8 MB body limit", count, Double(total) / 1e6))
        let push = try NodeProcess.run(cli, ["--dir", root.appendingPathComponent("f").path, "sync", "http://127.0.0.1:\(port)/default", "--push"])
        let pushed = try push.syncReport().pushed
        await listener.stop()
        guard let arrived = try target.database("default")?.defaultCollection() else { throw SyncError.listenerFailed("no target") }
        var intact = 0
        for (id, digest) in digests {
            if let blob = try arrived.document(id: id)?.blob(forKey: "file"), blob.digest == digest,
               let file = arrived.blobFile(digest: digest), try Blob(contentType: "", fileURL: file).digest == digest {
                intact += 1
            }
        }
        print(String(format: "  pushed %d, arrived intact %d of %d (%@), %.1f MB/s, peak RSS %.0f MB (sync)",
                     pushed, intact, count, intact == count ? "met" : "MISSED", Double(total) / 1e6 / push.seconds, push.peakRSS))
    }

    /// The child mode `save-blob DIR FILE`: saves FILE as the blob of document `large` in DIR's
    /// default database, read from the file as a stream.
    static func saveBlob(directory: String, file: String) throws {
        let db = try Database(name: "default", config: DatabaseConfiguration(directory: URL(fileURLWithPath: directory)))
        defer { try? db.close() }
        let doc = MutableDocument(id: "large")
        doc.setBlob(try Blob(contentType: "video/mp4", fileURL: URL(fileURLWithPath: file)), forKey: "video")
        try db.defaultCollection().save(doc)
    }

    private static func check(digestOf file: URL, in directory: URL) throws {
        let expected = try Blob(contentType: "", fileURL: file).digest
        let db = try Database(name: "default", config: DatabaseConfiguration(directory: directory))
        defer { try? db.close() }
        let collection = try db.defaultCollection()
        guard let blob = try collection.document(id: "large")?.blob(forKey: "video"), blob.digest == expected,
              let stored = collection.blobFile(digest: expected), try Blob(contentType: "", fileURL: stored).digest == expected else {
            throw SyncError.listenerFailed("self-check: the pulled blob is not the file's content")
        }
    }

    private static func writeFile(_ url: URL, bytes: Int, seed: UInt64) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw SyncError.listenerFailed("cannot create \(url.path)") }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written = 0, chunk: UInt64 = 0
        while written < bytes {
            let piece = pseudoRandom(min(8 << 20, bytes - written), seed: seed &* 1_000_003 &+ chunk)
            try handle.write(contentsOf: piece)
            written += piece.count
            chunk += 1
        }
    }

    /// Incompressible bytes (xorshift), as photos and video are.
    private static func pseudoRandom(_ count: Int, seed: UInt64) -> Data {
        var state = seed | 1
        var bytes = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            var word = state
            for _ in 0..<8 where i < count {
                bytes[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return Data(bytes)
    }
}
