import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A pull from a node fetches a batch's attachments in a few `multipart/mixed` `_bulk_get`
/// answers, not one request per attachment; what such an answer leaves out is fetched alone.
@Suite struct AttachmentBatchTests {
    typealias Peer = ReplicatorTests.Peer

    /// `count` documents on `collection`, document i with i % 3 + 1 attachments of different
    /// content (one of them under `_attachments`' own name space, the rest as properties).
    private static func save(_ count: Int, into collection: DocumentCollection) throws -> [String: [Data]] {
        var saved: [String: [Data]] = [:]
        for i in 0..<count {
            let doc = MutableDocument(id: "photo-\(i)")
            for k in 0...(i % 3) {
                let content = Data((0..<(20_000 + 997 * i + k)).map { UInt8(truncatingIfNeeded: $0 &* (i + 3) &+ k) })
                doc.setBlob(Blob(contentType: "image/jpeg", data: content), forKey: "image\(k)")
                saved[doc.id, default: []].append(content)
            }
            try collection.save(doc)
        }
        return saved
    }

    private static func contents(of id: String, in collection: DocumentCollection) throws -> [Data] {
        guard let doc = try collection.document(id: id) else { return [] }
        return (0..<3).compactMap { doc.blob(forKey: "image\($0)")?.content }
    }

    @Test func aNodesAttachmentsComeInAFewAnswers() async throws {
        let (h, served) = try await RequestLog.harness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let saved = try Self.save(30, into: remote)
            try remote.save(try MutableDocument(id: "plain", data: ["text": "no attachment"]))
            let bytes = saved.values.joined().reduce(0) { $0 + $1.count }
            let peer = try Peer()
            let before = h.listener.status.bytesSent
            #expect(try await Replicator(config: SharedFetchTests.pull(into: peer, from: try ReplicatorTests.pairingURL(h))).runOnce().pulled == 31)
            let sent = h.listener.status.bytesSent - before
            for (id, contents) in saved { #expect(try Self.contents(of: id, in: peer.collection) == contents, "\(id)") }
            #expect(try peer.collection.document(id: "plain")?.string(forKey: "text") == "no attachment")

            let requests = served.all
            let attachmentGETs = requests.filter { $0.hasPrefix("GET /db/photo-") }
            #expect(attachmentGETs.isEmpty, "attachments fetched one at a time: \(attachmentGETs.prefix(3))")
            let bulkGets = requests.filter { $0.hasSuffix("/_bulk_get") }.count
            // One JSON answer for the documents (or two halves), at most four for their attachments.
            #expect(bulkGets >= 2 && bulkGets <= 6, "\(requests)")
            // The welcome that names the feature asked once, not by each of the four answers.
            #expect(requests.filter { $0 == "GET /" }.count == 1, "\(requests.filter { $0.hasPrefix("GET /") && !$0.hasPrefix("GET /db/") })")
            // Raw bytes, each attachment once: not base64, not twice.
            #expect(sent > bytes && sent < bytes + bytes / 10, "\(sent) bytes sent for \(bytes) bytes of attachments")
        }
    }

    @Test func anAttachmentTheAnswerLeavesOutIsFetchedAlone() async throws {
        let (h, served) = try await RequestLog.harness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let saved = try Self.save(6, into: remote)
            // The node lost one blob's file: it sends that attachment as a stub, and answers 404 for it alone.
            let lost = try #require(try remote.document(id: "photo-4")?.blob(forKey: "image1"))
            try FileManager.default.removeItem(at: try #require(remote.blobFile(digest: lost.digest)))
            let peer = try Peer()
            _ = try await Replicator(config: SharedFetchTests.pull(into: peer, from: try ReplicatorTests.pairingURL(h))).runOnce()
            for (id, contents) in saved where id != "photo-4" { #expect(try Self.contents(of: id, in: peer.collection) == contents, "\(id)") }
            #expect(try peer.collection.document(id: "photo-4") == nil, "a document was saved without its attachment's content")
            let alone = served.all.filter { $0.hasPrefix("GET /db/photo-") }
            #expect(alone == ["GET /db/photo-4/blob_/image1"], "\(alone)")
        }
    }

    /// One of a batch's answers unusable (a 502): its attachments are fetched alone, and what the
    /// other answer brought is kept.
    @Test func anUnusableAnswerCostsOnlyItsOwnAttachments() async throws {
        // The first `_bulk_get` sends the documents; the next is the first of their attachments'.
        let (h, served) = try await RequestLog.harness { request, before in
            request.hasSuffix("/_bulk_get") && before.filter { $0.hasSuffix("/_bulk_get") }.count == 1 ? 502 : nil
        }
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let saved = try Self.save(2, into: remote)
            let peer = try Peer()
            #expect(try await Replicator(config: SharedFetchTests.pull(into: peer, from: try ReplicatorTests.pairingURL(h))).runOnce().pulled == 2)
            for (id, contents) in saved { #expect(try Self.contents(of: id, in: peer.collection) == contents, "\(id)") }
            #expect(served.all.filter { $0.hasSuffix("/_bulk_get") }.count == 3, "\(served.all)")
            // photo-0 has one attachment, photo-1 two: one document's fetched alone, not both's.
            let alone = Set(served.all.filter { $0.hasPrefix("GET /db/photo-") }.map { $0.split(separator: "/")[2] })
            #expect(alone.count == 1, "\(served.all)")
        }
    }
}
