import Foundation
import Hummingbird
import NIOCore
import SyncNodeStore

/// CouchDB's `multipart/mixed` answer to `GET /{db}/{doc}?open_revs=...`
/// (what its replicator asks for): one part per revision, and
/// `application/json; error="true"` parts for revisions the node does not
/// have. A revision whose attachments travel with it is a `multipart/related`
/// part (see ``MultipartRelated/Upload``): its JSON first (those attachments
/// marked `"follows": true`), then each attachment's bytes, read from its blob
/// file as the client takes them. One without is a plain `application/json` part.
enum MultipartMixed {
    struct Part: Sendable {
        /// The part's JSON text.
        var json: String
        /// The content of the attachments the JSON marks `follows`.
        var files: [String: AttachmentFile] = [:]
        /// A `{"missing": rev}` part.
        var error: Bool = false
    }

    /// An answer whose parts `produce` writes, each with ``write(_:boundary:to:)``, as it makes them.
    static func response(_ produce: @escaping @Sendable (_ boundary: String, inout any ResponseBodyWriter) async throws -> Void) -> Response {
        let boundary = WireID.random()
        let body = ResponseBody { writer in
            try await produce(boundary, &writer)
            try await writer.write(ByteBuffer(string: "--\(boundary)--"))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\"\(boundary)\""], body: body)
    }

    /// Writes one part: its JSON in slices, then any attachment files as the client takes them.
    static func write(_ part: Part, boundary: String, to writer: inout any ResponseBodyWriter) async throws {
        guard !part.files.isEmpty else {
            var head = ByteBuffer(string: "--\(boundary)\r\n")
            head.writeString("Content-Type: application/json\(part.error ? "; error=\"true\"" : "")\r\n\r\n")
            try await writer.write(head)
            try await AnswerStream.writeSlices(of: part.json, from: 0, to: &writer)
            try await writer.write(ByteBuffer(string: "\r\n"))
            return
        }
        let upload = MultipartRelated.Upload(json: Array(part.json.utf8), files: part.files)
        for try await piece in upload.enclosed(in: "--\(boundary)\r\nContent-Type: \(upload.contentType)\r\n\r\n", "\r\n") {
            try await writer.write(piece)
        }
    }
}

extension MultipartMixed {
    /// Writes revision `revision` of document `id` as one part: `multipart/related`, its JSON
    /// followed by the attachments a reader holding `attsSince` lacks, or plain JSON when none
    /// follow. A body compacted away writes nothing (and returns false).
    @discardableResult
    static func writeRevision(
        id: String, _ revision: StreamedRevision, revs: Bool, attsSince: [String], collection: DocumentCollection,
        boundary: String, stream: inout AnswerStream, to writer: inout any ResponseBodyWriter
    ) async throws -> Bool {
        guard let body = try collection.body(id: id, rev: revision.rev, readingAtMost: AnswerStream.largeBody) else { return false }
        let history = revs ? revision.history : nil
        try await AnswerStream.withWholeBody(id: id, rev: revision.rev, body, budget: stream.budget, collection: collection) { text in
            guard WireDocument.hasBlobs(text) else {
                // A plain JSON part, written as `_bulk_get` writes a document.
                try await writer.write(ByteBuffer(string: "--\(boundary)\r\nContent-Type: application/json\r\n\r\n"))
                try await stream.writeDocument(
                    id: id, rev: revision.rev, deleted: revision.deleted, body: .text(text), revisions: history,
                    collection: collection, to: &writer
                ) { try WireDocument.encode(id: id, rev: revision.rev, deleted: revision.deleted, body: $0, revisions: history, collection: collection) }
                try await stream.flush(&writer, all: true)
                try await writer.write(ByteBuffer(string: "\r\n"))
                return
            }
            var files: [String: AttachmentFile] = [:]
            let attachments = try WireDocument.attachments(of: revision.stored(body: text), attsSince: attsSince, collection: collection).asFiles
            let json = try WireDocument.encode(
                id: id, rev: revision.rev, deleted: revision.deleted, body: text, revisions: history,
                attachments: attachments, collection: collection, files: &files)
            try await write(.init(json: json, files: files), boundary: boundary, to: &writer)
        }
        return true
    }
}

extension MultipartMixed {
    /// Reads a `multipart/mixed` answer of documents as its bytes arrive (``response(_:)``'s):
    /// the attachments following each `multipart/related` part's JSON go into `collection`'s
    /// blob store (a ``BlobBatch``, for the caller to place), each checked against what the
    /// JSON declares, none held in memory. Plain
    /// JSON parts (a document none follow, an error) are skipped: the reader fetches what it
    /// did not receive another way. One answer's, on one task.
    final class Reader {
        /// What a part's document is known by.
        struct Received {
            let id: String
            let rev: String
            let written: [String: WrittenAttachment]
        }

        private var scanner: MultipartScanner
        private let jsonLimit: Int
        private let attachmentLimit: Int
        private let collection: DocumentCollection
        private let batch: BlobBatch
        private let inspect: ([String: DocumentValue]) throws -> Void
        /// The `multipart/related` part being read.
        private var part: MultipartRelated.Reader?
        private var received: [Received] = []

        /// `inspect` sees each part's document before any of its attachments is written, and
        /// refuses it by throwing (one that was not asked for, say).
        init(boundary: String, jsonLimit: Int, attachmentLimit: Int, collection: DocumentCollection, batch: BlobBatch,
             inspect: @escaping ([String: DocumentValue]) throws -> Void) {
            scanner = MultipartScanner(boundary: boundary)
            self.jsonLimit = jsonLimit
            self.attachmentLimit = attachmentLimit
            self.collection = collection
            self.batch = batch
            self.inspect = inspect
        }

        /// Reads the answer's next bytes.
        /// - Throws: `CouchError` 400 for a malformed answer or content that does not match its
        ///   declaration, 413 beyond a limit; what `inspect` throws; `StoreError` when the blob
        ///   store fails.
        func feed(_ bytes: UnsafeRawBufferPointer) throws {
            try scanner.feed(bytes, headers: { headers in
                part = try MultipartRelated.boundary(contentType: headers["content-type"] ?? "").map {
                    try MultipartRelated.Reader(boundary: $0, jsonLimit: jsonLimit, attachmentLimit: attachmentLimit, collection: collection, batch: batch, inspect: inspect)
                }
            }, body: { bytes in
                try part?.feed(bytes)
            }, end: {
                guard let part else { return }
                self.part = nil
                // Only what names the document is kept: a batch's bodies came in the first answer.
                let (object, written) = try part.result()
                received.append(Received(id: object["_id"]?.stringValue ?? "", rev: object["_rev"]?.stringValue ?? "", written: written))
            })
        }

        /// Each document received with the attachment files that followed it, once the whole
        /// answer was fed.
        func result() throws -> [Received] {
            guard scanner.isComplete else { throw CouchError.badRequest("the multipart answer ended before its closing boundary") }
            return received
        }

        /// Drops a part left half-read.
        func abandon() {
            part?.abandon()
            part = nil
        }
    }
}
