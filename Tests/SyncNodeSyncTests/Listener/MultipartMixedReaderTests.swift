import Crypto
import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a puller makes of a node's `multipart/mixed` `_bulk_get` answer, however it is cut
/// into pieces, and of answers a broken or hostile peer might send: content that does not
/// match its declaration, or an answer that stops, keeps nothing.
@Suite struct MultipartMixedReaderTests {
    typealias Peer = ReplicatorTests.Peer

    private static let content = Array("the attachment's own bytes, --B and --R inside\r\n".utf8)

    /// An answer with one document (`id`) whose attachment `name` follows (declaring `digest`
    /// and `length`, with `bytes` sent), and an error part.
    private static func answer(id: String = "a", name: String = "photo", bytes: [UInt8] = content, digest: String? = nil, length: Int? = nil,
                               closed: Bool = true) -> [UInt8] {
        let md5 = digest ?? "md5-" + Data(Insecure.MD5.hash(data: content)).base64EncodedString()
        let json = #"{"_id":"\#(id)","_rev":"1-x","_attachments":{"\#(name)":{"content_type":"image/jpeg","digest":"\#(md5)","length":\#(length ?? content.count),"follows":true}}}"#
        var text = Array("--B\r\nContent-Type: multipart/related; boundary=\"R\"\r\n\r\n--R\r\nContent-Type: application/json\r\n\r\n\(json)\r\n".utf8)
        text += Array("--R\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\n\r\n".utf8) + bytes + Array("\r\n--R--\r\n".utf8)
        text += Array("--B\r\nContent-Type: application/json; error=\"true\"\r\n\r\n{\"id\":\"b\",\"error\":\"not_found\"}\r\n".utf8)
        if closed { text += Array("--B--".utf8) }
        return text
    }

    /// A document received, with its attachments' files once placed.
    struct Document {
        let id: String
        let rev: String
        let files: [String: AttachmentFile]
    }

    /// The answer read as a puller that asked for document `a` reads it: its attachments are
    /// placed afterwards, even when the answer was refused.
    private static func read(_ answer: [UInt8], chunk: Int, into collection: DocumentCollection) throws -> [Document] {
        let batch = try collection.blobBatch()
        let reader = MultipartMixed.Reader(boundary: "B", jsonLimit: 1 << 20, attachmentLimit: 1 << 20, collection: collection, batch: batch) { object in
            guard object["_id"] == "a" else { throw CouchError.badRequest("not asked for") }
        }
        defer { reader.abandon() }
        let received: [MultipartMixed.Reader.Received]
        do {
            var start = 0
            while start < answer.count {
                try Array(answer[start..<min(start + chunk, answer.count)]).withUnsafeBytes { try reader.feed($0) }
                start += chunk
            }
            received = try reader.result()
        } catch {
            try batch.place()
            throw error
        }
        try batch.place()
        return try received.map { Document(id: $0.id, rev: $0.rev, files: try $0.written.mapValues { try $0.file(in: collection) }) }
    }

    /// Files under `dir` that are blobs or blobs being written.
    private static func blobFiles(under dir: URL) -> [String] {
        let all = FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? []
        return all.filter { $0.hasSuffix(".blob") || $0.contains(".tmp-") }
    }

    @Test func aDocumentsAttachmentArrivesWhateverThePieces() throws {
        for chunk in [1, 7, 64, 4096] {
            let peer = try Peer()
            let documents = try Self.read(Self.answer(), chunk: chunk, into: peer.collection)
            #expect(documents.count == 1, "chunk \(chunk): the error part is skipped, the document read")
            let file = try #require(documents.first?.files["photo"])
            #expect(try Data(contentsOf: file.url) == Data(Self.content), "chunk \(chunk)")
            #expect(documents.first?.id == "a" && documents.first?.rev == "1-x")
        }
    }

    /// A name that begins or ends with a space (or `;`) is read as it was sent.
    @Test func anAttachmentsNameIsReadExactly() throws {
        for name in [" photo", "photo ", "photo;", "a;b c"] {
            let peer = try Peer()
            let documents = try Self.read(Self.answer(name: name), chunk: 64, into: peer.collection)
            #expect(documents.first?.files.keys.sorted() == [name], "\(name)")
        }
    }

    /// A document the reader did not ask for is refused before any of its content is written.
    @Test func aDocumentNotAskedForIsRefusedBeforeItsContent() throws {
        let peer = try Peer()
        #expect(throws: CouchError.self) { try Self.read(Self.answer(id: "other"), chunk: 64, into: peer.collection) }
        #expect(Self.blobFiles(under: peer.dir).isEmpty, "\(Self.blobFiles(under: peer.dir))")
    }

    @Test func contentThatDoesNotMatchItsDeclarationIsRefusedAndNotKept() throws {
        let wrong = Array(Self.content.reversed())
        let cases: [(String, [UInt8])] = [
            ("another digest", Self.answer(digest: "md5-AAAAAAAAAAAAAAAAAAAAAA==")),
            ("other bytes", Self.answer(bytes: wrong)),
            ("longer than declared", Self.answer(length: Self.content.count - 1)),
        ]
        for (name, answer) in cases {
            let peer = try Peer()
            #expect(throws: CouchError.self, "\(name)") { try Self.read(answer, chunk: 5, into: peer.collection) }
            #expect(Self.blobFiles(under: peer.dir).isEmpty, "\(name): \(Self.blobFiles(under: peer.dir))")
        }
    }

    @Test func anAnswerThatStopsIsAnError() throws {
        let peer = try Peer()
        let answer = Self.answer(closed: false)
        #expect(throws: CouchError.self) { try Self.read(answer, chunk: 9, into: peer.collection) }
        // Cut inside the attachment's bytes: the half-written blob is dropped.
        let inside = try #require(String(decoding: answer, as: UTF8.self).range(of: "own bytes")).lowerBound.utf16Offset(in: String(decoding: answer, as: UTF8.self))
        let cut = Array(answer.prefix(inside))
        #expect(throws: CouchError.self) { try Self.read(cut, chunk: 9, into: peer.collection) }
        #expect(Self.blobFiles(under: peer.dir).filter { $0.contains(".tmp-") }.isEmpty)
    }
}
