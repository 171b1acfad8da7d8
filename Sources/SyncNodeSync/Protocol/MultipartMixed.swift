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
        try await writer.write(ByteBuffer(string: "--\(boundary)\r\nContent-Type: \(upload.contentType)\r\n\r\n"))
        for try await piece in upload { try await writer.write(piece) }
        try await writer.write(ByteBuffer(string: "\r\n"))
    }
}
