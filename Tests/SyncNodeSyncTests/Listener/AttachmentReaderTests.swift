import Foundation
import NIOCore
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Attachments are read from their files straight into the pieces that go on the wire: a
/// small one travels in one piece with its part's headers, a large one (or a large document's
/// JSON) in pieces of at most 256 KB, and a file that is not its declared length is an error,
/// never a short or long body.
@Suite struct AttachmentReaderTests {
    typealias Peer = ReplicatorTests.Peer

    /// A document on `peer` with one attachment per size, and their files by name.
    private static func files(_ sizes: [Int], on peer: Peer) throws -> (contents: [String: Data], files: [String: AttachmentFile]) {
        let doc = MutableDocument(id: "doc")
        var contents: [String: Data] = [:]
        for (i, size) in sizes.enumerated() {
            let content = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) })
            contents["file\(i)"] = content
            doc.setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "file\(i)")
        }
        try peer.collection.save(doc)
        var files: [String: AttachmentFile] = [:]
        for name in contents.keys {
            let blob = try #require(try peer.collection.document(id: "doc")?.blob(forKey: name))
            files[name] = try #require(AttachmentFile(digest: blob.digest, contentType: blob.contentType, in: peer.collection))
        }
        return (contents, files)
    }

    private static func pieces(of upload: MultipartRelated.Upload) async throws -> [ByteBuffer] {
        var pieces: [ByteBuffer] = []
        for try await piece in upload { pieces.append(piece) }
        return pieces
    }

    @Test func smallAttachmentsAndTheirHeadersTravelInOnePiece() async throws {
        let peer = try Peer()
        let (contents, files) = try Self.files([10_000, 1, 30_000], on: peer)
        let json = Array(#"{"_id":"doc","_rev":"1-x"}"#.utf8)
        let upload = MultipartRelated.Upload(json: json, files: files).enclosed(in: "--B\r\n", "\r\n")
        let pieces = try await Self.pieces(of: upload)
        #expect(pieces.count == 1)
        let bytes = pieces.reduce(into: [UInt8]()) { $0 += $1.readableBytesView }
        #expect(bytes.count == upload.length)
        #expect(bytes.starts(with: Array("--B\r\n".utf8)) && bytes.suffix(2) == Array("\r\n".utf8)[...])
        for (name, content) in contents {
            #expect(bytes.firstRange(of: Array(content)) != nil, "\(name)'s bytes are in the body")
        }
    }

    @Test func aLargeAttachmentTravelsInBoundedPiecesAndReadsBackWhole() async throws {
        let peer = try Peer()
        let (contents, files) = try Self.files([700_000, 5], on: peer)
        var attachments: [String: DocumentValue] = [:]
        for (name, file) in files {
            attachments[name] = .dictionary(["follows": true, "length": .int(Int64(file.length)), "digest": .string(file.md5)])
        }
        // A document's JSON larger than a piece too.
        let pad = DocumentValue.string(String(repeating: "j", count: 300_000))
        let json = DocumentValue.dictionary(["_id": "doc", "_rev": "1-x", "pad": pad, "_attachments": .dictionary(attachments)]).toJSON()
        let upload = MultipartRelated.Upload(json: Array(json.utf8), files: files)
        let pieces = try await Self.pieces(of: upload)
        let size = MultipartRelated.Upload.pieceSize
        #expect(pieces.count == (upload.length + size - 1) / size, "\(pieces.map(\.readableBytes))")
        #expect(pieces.dropLast().allSatisfy { $0.readableBytes == size } && pieces.last.map { $0.readableBytes <= size } == true)
        #expect(pieces.reduce(0) { $0 + $1.readableBytes } == upload.length)
        // What a node reading the body as an upload keeps: the same content.
        let other = try Peer()
        let boundary = try #require(MultipartScanner.boundary(of: "multipart/related", in: upload.contentType))
        let read = try await MultipartRelated.read(upload, boundary: boundary, jsonLimit: 1 << 20, attachmentLimit: 1 << 20, into: other.collection)
        for (name, content) in contents {
            let file = try #require(read.files[name])
            #expect(try Data(contentsOf: file.url) == content, "\(name)")
        }
    }

    @Test func aFileShorterThanItsLengthIsAnErrorAndALongerOneIsCut() throws {
        let dir = try TempDirectory()
        let url = dir.url.appendingPathComponent("blob")
        try Data(repeating: 42, count: 10).write(to: url)

        let short = try AttachmentReader(url: url, length: 20)
        var buffer = ByteBuffer()
        try short.read(into: &buffer, upTo: 100)
        #expect(buffer.readableBytes == 10 && !short.isDone)
        #expect { try short.read(into: &buffer, upTo: 100) } throws: { ($0 as? CouchError)?.error == "attachment_changed" }

        let long = try AttachmentReader(url: url, length: 4)
        var cut = ByteBuffer()
        try long.read(into: &cut, upTo: 100)
        try long.read(into: &cut, upTo: 100)
        #expect(cut.readableBytes == 4 && long.isDone)

        #expect { try AttachmentReader(url: dir.url.appendingPathComponent("gone"), length: 1) } throws: {
            ($0 as? CouchError)?.error == "attachment_missing"
        }
    }
}
