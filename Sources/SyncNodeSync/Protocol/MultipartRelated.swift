import Crypto
import Foundation
import NIOCore
import SyncNodeStore

/// CouchDB's `multipart/related` document upload (what its replicator sends
/// for documents with attachments): a JSON part, then one part per attachment
/// marked `"follows": true`, in the order the JSON lists them.
///
/// Both directions stream: an upload is read into the blob store as it
/// arrives (``read(_:boundary:jsonLimit:attachmentLimit:into:)``) and a push
/// is sent from the blob files (``Upload``), so an attachment's size is
/// bounded by the disk, not by memory.
enum MultipartRelated {
    /// The boundary of a `multipart/related; boundary="..."` content type, or nil.
    static func boundary(contentType: String) -> String? {
        MultipartScanner.boundary(of: "multipart/related", in: contentType)
    }

    /// Reads an upload as it arrives: the document, each `follows` attachment's content
    /// written to `collection`'s blob store (checked against the length and digest the
    /// document declares) and returned as a file. The JSON part may hold `jsonLimit` bytes,
    /// each attachment `attachmentLimit`. A gzip-encoded attachment (CouchDB sends text
    /// ones so) is decoded as it arrives, into the blob store like the others: no part is
    /// held in memory, however many there are.
    /// - Throws: `CouchError` 400 for a malformed body or content that does not match its
    ///   declaration, 413 beyond a limit; `StoreError` when the blob store fails.
    static func read<Body: AsyncSequence>(
        _ body: Body, boundary: String, jsonLimit: Int, attachmentLimit: Int, into collection: DocumentCollection
    ) async throws -> (object: [String: DocumentValue], files: [String: AttachmentFile]) where Body.Element == ByteBuffer {
        let batch = try collection.blobBatch()
        let reader = try Reader(boundary: boundary, jsonLimit: jsonLimit, attachmentLimit: attachmentLimit, collection: collection, batch: batch)
        defer { reader.abandon() }
        let result: (object: [String: DocumentValue], written: [String: WrittenAttachment])
        do {
            for try await buffer in body {
                try buffer.withUnsafeReadableBytes { try reader.feed($0) }
            }
            result = try reader.result()
        } catch {
            // Parts already received are placed all the same: a retry finds them there.
            try? batch.place()
            throw error
        }
        try batch.place()
        return (result.object, try result.written.mapValues { try $0.file(in: collection) })
    }

    /// A body read as its bytes are fed: a request's, or one part of a `multipart/mixed`
    /// answer (``MultipartMixed/Reader``). One body's, on one task.
    final class Reader {
        private var scanner: MultipartScanner
        private let parts: PartReader

        /// Attachments go into `batch`, for the caller to place. `inspect` sees the document once
        /// its JSON is read, before any attachment is written, and may refuse it by throwing.
        /// - Throws: `CouchError` 400 for a boundary of more than 200 characters or none.
        init(boundary: String, jsonLimit: Int, attachmentLimit: Int, collection: DocumentCollection, batch: BlobBatch,
             inspect: (([String: DocumentValue]) throws -> Void)? = nil) throws {
            guard !boundary.isEmpty, boundary.utf8.count <= 200 else {
                throw CouchError.badRequest("the multipart boundary must be 1 to 200 characters")
            }
            scanner = MultipartScanner(boundary: boundary)
            parts = PartReader(jsonLimit: jsonLimit, attachmentLimit: attachmentLimit, collection: collection, batch: batch)
            parts.inspect = inspect
        }

        /// Reads the body's next bytes.
        /// - Throws: what ``MultipartRelated/read(_:boundary:jsonLimit:attachmentLimit:into:)`` throws.
        func feed(_ bytes: UnsafeRawBufferPointer) throws {
            let parts = parts
            try scanner.feed(bytes, headers: { parts.headers = $0 }, body: { parts.body($0) }, end: { parts.complete() })
            if let error = parts.error { throw error }
        }

        /// The document and its attachments (in the batch, not yet placed), once the whole body was fed.
        func result() throws -> (object: [String: DocumentValue], written: [String: WrittenAttachment]) {
            guard scanner.isComplete else {
                throw CouchError.badRequest("the multipart body ended before its closing boundary")
            }
            return try parts.result()
        }

        /// Drops a part left half-read.
        func abandon() { parts.abandon() }
    }

    /// The parts as they are read. One request's, on one task.
    private final class PartReader {
        let jsonLimit: Int
        let attachmentLimit: Int
        let collection: DocumentCollection
        /// Where the attachments' blobs wait to be placed.
        let batch: BlobBatch
        var headers: [String: String] = [:]
        private(set) var error: (any Error)?

        private var json: [UInt8] = []
        private var object: [String: DocumentValue]?
        private var attachments: [String: DocumentValue] = [:]
        /// The `follows` attachments without a part yet, in the order the JSON lists them.
        private var waiting: [String] = []
        private var written: [String: WrittenAttachment] = [:]

        /// The attachment part being read, and the length its entry declares.
        private var current: (name: String, entry: [String: DocumentValue])?
        private var declared: Int?
        /// Called with the document once its JSON part is read, before any attachment is
        /// written: it may refuse it (a reader of an answer refuses what it did not ask for).
        var inspect: (([String: DocumentValue]) throws -> Void)?
        private var writer: BlobWriter?
        /// For a gzip-encoded part: its decoder, and the MD5 of the bytes as sent (what its digest covers).
        private var decoder: GzipDecoder?
        private var encodedMD5 = Insecure.MD5()

        init(jsonLimit: Int, attachmentLimit: Int, collection: DocumentCollection, batch: BlobBatch) {
            self.jsonLimit = jsonLimit
            self.attachmentLimit = attachmentLimit
            self.collection = collection
            self.batch = batch
        }

        /// The next bytes of the current part, straight from the scanner (not copied into a
        /// buffer of their own unless a decoder needs one).
        func body(_ bytes: UnsafeRawBufferPointer) {
            guard error == nil else { return }
            do {
                guard object != nil else {
                    guard json.count + bytes.count <= jsonLimit else {
                        throw CouchError.tooLarge("the JSON part is larger than \(jsonLimit) bytes")
                    }
                    json.append(contentsOf: bytes)
                    return
                }
                try startPart()
                if let decoder, let writer {
                    encodedMD5.update(bufferPointer: bytes)
                    try decoder.feed(ByteBuffer(bytes: bytes)) { piece in try piece.withUnsafeReadableBytes { try writer.append($0) } }
                } else if let writer {
                    guard writer.length + bytes.count <= attachmentLimit else {
                        throw CouchError.tooLarge("Attachment is larger than \(attachmentLimit) bytes")
                    }
                    // Refused as soon as it passes what its document declares, not once it is all written.
                    if let declared, writer.length + bytes.count > declared, let name = current?.name {
                        throw CouchError.badRequest("attachment '\(name)' is longer than the \(declared) bytes the document declares")
                    }
                    try writer.append(bytes)
                }
            } catch {
                self.error = error
            }
        }

        func complete() {
            guard error == nil else { return }
            do {
                if object == nil {
                    try readJSON()
                } else {
                    try startPart()
                    try finishPart()
                }
            } catch {
                self.error = error
            }
            headers = [:]
        }

        func result() throws -> (object: [String: DocumentValue], written: [String: WrittenAttachment]) {
            if let error { throw error }
            guard var object else { throw CouchError.badRequest("the multipart body ended before its JSON part did") }
            if let missing = waiting.first {
                throw CouchError.badRequest("attachment '\(missing)' is marked follows, but the body ended before its part")
            }
            if !attachments.isEmpty { object["_attachments"] = .dictionary(attachments) }
            return (object, written)
        }

        /// Drops a part left half-read (a body that broke off, or an error).
        func abandon() {
            writer?.abandon()
            writer = nil
        }

        private func readJSON() throws {
            guard let text = String(validating: json, as: UTF8.self) else {
                throw CouchError.badRequest("the JSON part is not valid UTF-8")
            }
            guard case .dictionary(let object) = try DocumentValue(json: text) else {
                throw CouchError.badRequest("the first part must be a JSON object")
            }
            json = []
            try inspect?(object)
            self.object = object
            guard case .dictionary(let attachments)? = object["_attachments"] else { return }
            self.attachments = attachments
            waiting = attachments.compactMap { name, entry in
                if case .bool(true)? = entry["follows"] { return name }
                return nil
            }.sorted { position(of: $0, in: text) < position(of: $1, in: text) }
        }

        /// Begins the part whose headers were just read, once.
        private func startPart() throws {
            guard current == nil else { return }
            // A part may name its attachment; otherwise it is the next one the JSON lists.
            let named = filename(headers["content-disposition"])
            guard let name = named ?? waiting.first, let index = waiting.firstIndex(of: name),
                  case .dictionary(let entry)? = attachments[name] else {
                throw CouchError.badRequest("a multipart part matches no attachment marked follows")
            }
            waiting.remove(at: index)
            current = (name, entry)
            declared = nil
            if case .int(let length)? = entry["length"], length >= 0 { declared = Int(clamping: length) }
            if case .string(let encoding)? = entry["encoding"], encoding != "identity" {
                guard encoding == "gzip" else {
                    throw CouchError.unsupportedMediaType("attachment '\(name)' is \(encoding)-encoded; send it decoded or gzip-encoded")
                }
                // Decoded to at most its declared length (the decoder refuses more), and never beyond the limit.
                var limit = attachmentLimit
                if case .int(let declared)? = entry["length"], declared >= 0 { limit = min(limit, Int(clamping: declared)) }
                decoder = try GzipDecoder(limit: limit)
                encodedMD5 = Insecure.MD5()
            }
            writer = try collection.blobWriter()
        }

        private func finishPart() throws {
            guard let (name, entry) = current else { return }
            defer { current = nil }
            var stored = entry
            stored["follows"] = nil
            if let decoder {
                self.decoder = nil
                try decoder.finish()
                // The sender's MD5 covers the bytes as sent (gzip); a mismatch is corruption in transit.
                let md5 = "md5-" + Data(encodedMD5.finalize()).base64EncodedString()
                if case .string(let digest)? = entry["digest"], digest.hasPrefix("md5-"), digest != md5 {
                    throw CouchError.badRequest("attachment '\(name)': the content does not match its digest \(digest)")
                }
                for key in ["encoding", "encoded_length"] { stored[key] = nil }
            }
            if let writer {
                self.writer = nil
                // Placed with the others, one wait for the disk for all of them (``BlobBatch``).
                let blob = try writer.finish(into: batch) { md5, length in
                    try AttachmentFile.verify(md5: md5, length: length, against: entry, name: name)
                }
                written[name] = WrittenAttachment(blob: blob, contentType: entry["content_type"]?.stringValue ?? "application/octet-stream")
                stored["follows"] = true
            }
            attachments[name] = .dictionary(stored)
        }

        private func position(of name: String, in text: String) -> Int {
            guard let range = text.range(of: DocumentValue.string(name).toJSON() + ":") else { return Int.max }
            return text.utf8.distance(from: text.utf8.startIndex, to: range.lowerBound)
        }

        /// The name a part's `Content-Disposition` gives: a quoted one exactly as it stands between
        /// its quotes (a name may begin or end with a space), a bare one up to the next `;`.
        private func filename(_ disposition: String?) -> String? {
            guard let disposition, let range = disposition.firstRange(of: "filename=") else { return nil }
            let value = disposition[range.upperBound...]
            if value.hasPrefix("\"") {
                let quoted = value.dropFirst()
                return quoted.firstIndex(of: "\"").map { String(quoted[..<$0]) }
            }
            return value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map { String(MultipartScanner.trimmed($0)) }
        }
    }

    // MARK: - Sending

    /// A document and its attachments' files as a `multipart/related` request body, read
    /// from the files a piece at a time as it is sent.
    struct Upload: AsyncSequence, Sendable {
        typealias Element = ByteBuffer

        fileprivate enum Segment: Sendable {
            case bytes(ByteBuffer)
            case file(AttachmentFile)
        }

        private let segments: [Segment]
        /// The body's exact length.
        let length: Int
        /// The request's content type (with its boundary).
        let contentType: String

        /// `json` is the wire document; `files` the content of the attachments it marks
        /// `follows`, which go in the order its (canonical, byte-ordered) keys list them.
        init(json: [UInt8], files: [String: AttachmentFile]) {
            let boundary = WireID.random()
            var segments: [Segment] = [.bytes(ByteBuffer(string: "--\(boundary)\r\nContent-Type: application/json\r\n\r\n"))]
            var head = ByteBuffer(bytes: json)
            for (name, file) in files.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                head.writeString("\r\n--\(boundary)\r\n")
                // The name helps a reader that matches parts by it; one that would break out of the header is left out.
                if !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "\"" || $0 == "\\" }) {
                    head.writeString("Content-Disposition: attachment; filename=\"\(name)\"\r\n")
                }
                head.writeString("Content-Type: \(file.contentType)\r\nContent-Length: \(file.length)\r\n\r\n")
                segments.append(.bytes(head))
                segments.append(.file(file))
                head = ByteBuffer()
            }
            head.writeString("\r\n--\(boundary)--")
            segments.append(.bytes(head))
            self.init(segments: segments, contentType: "multipart/related; boundary=\"\(boundary)\"")
        }

        /// This body between `prefix` and `suffix`: the frame of a part in a larger answer,
        /// sent in the same pieces as the body.
        func enclosed(in prefix: String, _ suffix: String) -> Upload {
            Upload(segments: [.bytes(ByteBuffer(string: prefix))] + segments + [.bytes(ByteBuffer(string: suffix))], contentType: contentType)
        }

        private init(segments: [Segment], contentType: String) {
            self.segments = segments
            self.contentType = contentType
            length = segments.reduce(0) { total, segment in
                switch segment {
                case .bytes(let b): return total + b.readableBytes
                case .file(let f): return total + f.length
                }
            }
        }

        /// The most bytes one piece holds.
        static let pieceSize = 256 << 10

        /// Pieces of up to ``pieceSize``, headers, JSON and files together: an attachment of a
        /// few kilobytes and its part's headers go to the network as one write, not five, and a
        /// large document's JSON in pieces like a file's.
        struct AsyncIterator: AsyncIteratorProtocol {
            fileprivate var segments: IndexingIterator<[Segment]>
            /// The bytes not yet returned.
            fileprivate var remaining: Int
            /// What is left of the bytes segment being sent.
            fileprivate var bytes: ByteBuffer?
            fileprivate var reading: AttachmentReader?

            mutating func next() async throws -> ByteBuffer? {
                var piece = ByteBuffer()
                piece.reserveCapacity(Swift.min(Upload.pieceSize, remaining))
                while piece.readableBytes < Upload.pieceSize {
                    let room = Upload.pieceSize - piece.readableBytes
                    if var rest = bytes {
                        if var slice = rest.readSlice(length: Swift.min(room, rest.readableBytes)) { piece.writeBuffer(&slice) }
                        bytes = rest.readableBytes > 0 ? rest : nil
                        continue
                    }
                    if let file = reading {
                        try file.read(into: &piece, upTo: room)
                        if file.isDone { reading = nil }
                        continue
                    }
                    switch segments.next() {
                    case nil:
                        remaining -= piece.readableBytes
                        return piece.readableBytes > 0 ? piece : nil
                    case .bytes(let segment)?: bytes = segment
                    case .file(let file)?:
                        guard file.length > 0 else { continue }
                        reading = try AttachmentReader(url: file.url, length: file.length)
                    }
                }
                remaining -= piece.readableBytes
                return piece
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(segments: segments.makeIterator(), remaining: length)
        }
    }
}
