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

    static func response(_ parts: [Part]) -> Response {
        let boundary = WireID.random()
        let body = ResponseBody { writer in
            for part in parts {
                guard !part.files.isEmpty else {
                    var text = ByteBuffer(string: "--\(boundary)\r\n")
                    text.writeString("Content-Type: application/json\(part.error ? "; error=\"true\"" : "")\r\n\r\n")
                    text.writeString(part.json)
                    text.writeString("\r\n")
                    try await writer.write(text)
                    continue
                }
                let upload = MultipartRelated.Upload(json: Array(part.json.utf8), files: part.files)
                try await writer.write(ByteBuffer(string: "--\(boundary)\r\nContent-Type: \(upload.contentType)\r\n\r\n"))
                for try await piece in upload { try await writer.write(piece) }
                try await writer.write(ByteBuffer(string: "\r\n"))
            }
            try await writer.write(ByteBuffer(string: "--\(boundary)--"))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\"\(boundary)\""], body: body)
    }
}
