import CompressNIO
import Crypto
import Foundation
import NIOCore
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Attachments of megabytes through the listener and the replicator. Moving them in a debug
/// build keeps both cores busy for a while, which starves the tests that wait for something
/// within a deadline: `scripts/test.sh` runs these suites (`LargeAttachment...`) after the others.
@Suite(.serialized) struct LargeAttachmentTests {
    typealias Peer = ReplicatorTests.Peer

    /// A multipart upload streams its attachments into the blob store: one far larger than the
    /// JSON body limit is stored; one whose bytes do not match its digest or length, or whose
    /// part never arrives, is refused and leaves nothing behind.
    @Test func multipartUploadStreamsPastTheBodyLimitAndChecksContent() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 64 << 10)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
            let md5 = "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
            func upload(_ id: String, digest: String, length: Int, parts: [[UInt8]]) async throws -> ListenerHarness.Reply {
                let json = #"{"_id":"\#(id)","_rev":"1-abc","_attachments":{"big.bin":{"content_type":"application/octet-stream","follows":true,"length":\#(length),"digest":"\#(digest)"}}}"#
                var body = Array("--B\r\nContent-Type: application/json\r\n\r\n\(json)".utf8)
                for part in parts { body += Array("\r\n--B\r\n\r\n".utf8) + part }
                body += Array("\r\n--B--".utf8)
                return try await h.request(.PUT, "/db/\(id)?new_edits=false", bytes: body, headers: [("Content-Type", "multipart/related; boundary=B")])
            }
            let stored = try await upload("ok", digest: md5, length: bytes.count, parts: [bytes])
            #expect(stored.status == 201, "\(stored.body)")
            #expect(try await h.request(.GET, "/db/ok/big.bin").bytes == bytes)
            #expect(try await h.request(.GET, "/db/ok")["_attachments"]?["big.bin"]?["digest"]?.string == md5)

            var corrupted = bytes
            corrupted[1000] ^= 0xFF
            let wrongDigest = try await upload("bad", digest: md5, length: bytes.count, parts: [corrupted])
            #expect(wrongDigest.status == 400 && wrongDigest.body.contains("digest"), "\(wrongDigest.body)")
            let wrongLength = try await upload("short", digest: md5, length: bytes.count + 1, parts: [bytes])
            #expect(wrongLength.status == 400, "\(wrongLength.body)")
            let missingPart = try await upload("none", digest: md5, length: bytes.count, parts: [])
            #expect(missingPart.status == 400 && missingPart.body.contains("big.bin"), "\(missingPart.body)")
            for id in ["bad", "short", "none"] { #expect(try await h.request(.GET, "/db/\(id)").status == 404) }
            // Only the good upload's content is a blob; nothing half-written is left.
            let blobs = try FileManager.default.contentsOfDirectory(atPath: h.directory.appendingPathComponent("db.syncnode/blobs").path)
            #expect(blobs.filter { !$0.hasSuffix(".md5") }.count == 1, "\(blobs)")
        }
    }

    /// Gzip-encoded parts (as CouchDB's replicator sends text attachments) are decoded as they
    /// arrive, into the blob store: two parts each larger than the JSON body limit are stored
    /// decoded (they were once held in memory, and refused beyond that limit); a part decoding
    /// past its declared length, or not matching its digest, is refused.
    @Test func gzipPartsAreDecodedAsTheyArrive() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 64 << 10)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            // Text that compresses only so much: each gzip part stays well over 64 KiB.
            var generator = SystemRandomNumberGenerator()
            let texts = (0..<2).map { _ in (0..<(600 << 10)).map { _ in UInt8(ascii: "a") + UInt8.random(in: 0..<16, using: &generator) } }
            let parts = try texts.map { text in
                var input = ByteBuffer(bytes: text)
                return Array(buffer: try input.compress(with: .gzip()))
            }
            func entry(_ n: Int, length: Int, digest: String) -> String {
                #""t\#(n).txt":{"content_type":"text/plain","follows":true,"encoding":"gzip","length":\#(length),"digest":"\#(digest)"}"#
            }
            func upload(_ id: String, entries: [String], parts: [[UInt8]]) async throws -> ListenerHarness.Reply {
                let json = #"{"_id":"\#(id)","_rev":"1-abc","_attachments":{\#(entries.joined(separator: ","))}}"#
                var body = Array("--B\r\nContent-Type: application/json\r\n\r\n\(json)".utf8)
                for part in parts { body += Array("\r\n--B\r\n\r\n".utf8) + part }
                body += Array("\r\n--B--".utf8)
                return try await h.request(.PUT, "/db/\(id)?new_edits=false", bytes: body, headers: [("Content-Type", "multipart/related; boundary=B")])
            }
            let digests = parts.map { "md5-" + Data(Insecure.MD5.hash(data: $0)).base64EncodedString() }
            #expect(parts.allSatisfy { $0.count > 64 << 10 })
            let stored = try await upload("ok", entries: (0..<2).map { entry($0, length: texts[$0].count, digest: digests[$0]) }, parts: parts)
            #expect(stored.status == 201, "\(stored.body)")
            for n in 0..<2 { #expect(try await h.request(.GET, "/db/ok/t\(n).txt").bytes == texts[n]) }
            let bomb = try await upload("bomb", entries: [entry(0, length: 1000, digest: digests[0])], parts: [parts[0]])
            #expect(bomb.status == 413, "\(bomb.body)")
            let corrupt = try await upload("corrupt", entries: [entry(0, length: texts[0].count, digest: digests[1])], parts: [parts[0]])
            #expect(corrupt.status == 400 && corrupt.body.contains("digest"), "\(corrupt.body)")
            for id in ["bomb", "corrupt"] { #expect(try await h.request(.GET, "/db/\(id)").status == 404) }
        }
    }

    /// Attachments travel as files, never base64 in a batch: a push to a peer whose JSON body
    /// limit (64 KiB) is smaller than most of them delivers every document, a pull from that
    /// peer into a third node streams them back, and a local-to-local replication copies them.
    /// Each arrives byte for byte, named by the same digest.
    @Test func attachmentsLargerThanTheBodyLimitReplicateAsFiles() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 64 << 10)
        try await withCleanup({ await h.shutdown() }) {
            let middle = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let source = try Peer()
            var contents: [String: Data] = [:]
            for (i, size) in [10_000, 200_000, 3_000_000, 70_000, 1_000_000, 0].enumerated() {
                let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* (i + 7) &+ $0 >> 9) })
                let doc = MutableDocument(id: "d\(i)")
                doc.setBlob(Blob(contentType: "application/octet-stream", data: data), forKey: "file")
                doc.setString("small", forKey: "note")
                try source.collection.save(doc)
                contents["d\(i)"] = data
            }
            try source.collection.save(try MutableDocument(id: "plain", data: ["n": 1]))
            var push = ReplicatorConfiguration(collection: source.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            push.replicatorType = .push
            #expect(try await Replicator(config: push).runOnce().pushed == 7)

            let pulled = try Peer()
            var pull = ReplicatorConfiguration(collection: pulled.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            pull.replicatorType = .pull
            #expect(try await Replicator(config: pull).runOnce().pulled == 7)

            let copied = try Peer()
            var local = ReplicatorConfiguration(collection: pulled.collection, target: .collection(copied.collection))
            local.replicatorType = .push
            #expect(try await Replicator(config: local).runOnce().pushed == 7)

            for collection in [middle, pulled.collection, copied.collection] {
                for (id, data) in contents {
                    let blob = try #require(try collection.document(id: id)?.blob(forKey: "file"), "\(id)")
                    #expect(blob.content == data, "\(id) in \(collection.database.name)")
                    #expect(blob.digest == Blob(contentType: "application/octet-stream", data: data).digest)
                }
                #expect(try collection.document(id: "plain")?.int(forKey: "n") == 1)
            }
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
            let blobs = peer.appendingPathComponent("default.syncnode/blobs")
            @Sendable func files() -> [(name: String, size: Int)] {
                ((try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []).map { name in
                    (name, ((try? FileManager.default.attributesOfItem(atPath: blobs.appendingPathComponent(name).path))?[.size] as? Int) ?? 0)
                }
            }
            let killedMidway = try await SyncCommandTests.killPull(into: peer, from: url) {
                files().contains { $0.name.hasPrefix(".tmp-") && $0.size > 40 << 20 }
            }
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

/// Large attachments with a real CouchDB (see `CouchDBInteropTests`), run with the suite above.
@Suite(.serialized, .enabled(if: CouchDB.configured, "SYNCNODE_COUCHDB_URL is not set: CouchDB interoperability not tested"))
struct LargeAttachmentCouchDBTests {
    /// Attachments larger than any JSON body limit, both ways, with both replicators: a node
    /// pushes a 24 MB attachment to CouchDB (a multipart PUT) and another node pulls it back
    /// (streamed one attachment at a time, text ones gzip-stored by CouchDB included); CouchDB's
    /// own replicator then pushes them to a listener (a multipart upload) and pulls them from it
    /// (a multipart `open_revs` answer). Every copy holds the same bytes.
    @Test func largeAttachmentsTravelBothWaysWithCouchDB() async throws {
        let couch = try CouchDB()
        let h = try await ListenerHarness(maxRequestBodySize: 8 << 20)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let hub = "interop_att_\(suffix)", back = "interop_att_back_\(suffix)"
        try await withCleanup({ await h.shutdown(); await couch.shutdown(hub, back) }) {
            // One megabyte made once (a debug build fills 24 slowly, on a thread other tests need), each copy numbered.
            let megabyte = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
            var video = Data(capacity: 24 << 20)
            for index in 0..<24 {
                video.append(withUnsafeBytes(of: UInt64(index)) { Data($0) })
                video.append(megabyte.dropFirst(8))
            }
            let text = Data(String(repeating: "a line of compressible text\n", count: 4000).utf8)
            let source = try ReplicatorTests.Peer()
            let doc = MutableDocument(id: "video")
            doc.setBlob(Blob(contentType: "video/mp4", data: video), forKey: "clip")
            doc.setBlob(Blob(contentType: "text/plain", data: text), forKey: "subtitles")
            try source.collection.save(doc)
            #expect(try await couch.request(.PUT, "/\(hub)").status == 201)
            var url = try #require(URLComponents(string: couch.base + "/" + hub))
            let credentials = try #require(Data(base64Encoded: String(couch.authorization.dropFirst(6))).flatMap { String(data: $0, encoding: .utf8) })
            url.user = String(credentials.prefix { $0 != ":" })
            url.password = String(credentials.drop { $0 != ":" }.dropFirst())
            var push = ReplicatorConfiguration(collection: source.collection, target: .url(try #require(url.url)))
            push.replicatorType = .push
            #expect(try await Replicator(config: push).runOnce().pushed == 1)
            #expect(try await couch.request(.GET, "/\(hub)/video/blob_%2Fclip").bytes.elementsEqualFast(video))
            #expect(try await couch.request(.GET, "/\(hub)/video/blob_%2Fsubtitles").bytes.elementsEqualFast(text))

            let pulled = try ReplicatorTests.Peer()
            var pull = ReplicatorConfiguration(collection: pulled.collection, target: .url(try #require(url.url)))
            pull.replicatorType = .pull
            #expect(try await Replicator(config: pull).runOnce().pulled == 1)
            let arrived = try #require(try pulled.collection.document(id: "video"))
            #expect(arrived.blob(forKey: "clip")?.content == video && arrived.blob(forKey: "subtitles")?.content == text)

            // CouchDB's replicator: CouchDB -> listener (multipart upload), listener -> CouchDB (multipart open_revs).
            #expect(try await h.request(.PUT, "/fromcouch").status == 201)
            let toNode = try await couch.replicate(source: couch.endpoint(hub), target: h.replicationEndpoint("fromcouch"))
            #expect(toNode["ok"] == true && toNode["history"]?.array?.first?["doc_write_failures"] == 0, "\(toNode)")
            #expect(try await h.request(.GET, "/fromcouch/video/blob_%2Fclip").bytes.elementsEqualFast(video))
            let toCouch = try await couch.replicate(source: h.replicationEndpoint("fromcouch"), target: couch.endpoint(back), createTarget: true)
            #expect(toCouch["ok"] == true && toCouch["history"]?.array?.first?["doc_write_failures"] == 0, "\(toCouch)")
            #expect(try await couch.request(.GET, "/\(back)/video/blob_%2Fclip").bytes.elementsEqualFast(video))
            #expect(try await couch.request(.GET, "/\(back)/video/blob_%2Fsubtitles").bytes.elementsEqualFast(text))
        }
    }
}
