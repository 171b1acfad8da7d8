import Foundation
import Hummingbird
import NIOCore

/// CouchDB's `multipart/mixed` answer to `GET /{db}/{doc}?open_revs=...`
/// (what its replicator asks for): one `application/json` part per
/// revision, attachments inline, and `application/json; error="true"`
/// parts for revisions the node does not have.
enum MultipartMixed {
    struct Part {
        /// The part's JSON text.
        var json: String
        /// A `{"missing": rev}` part.
        var error: Bool
    }

    static func response(_ parts: [Part]) -> Response {
        let boundary = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var body = ByteBuffer()
        for part in parts {
            body.writeString("--\(boundary)\r\nContent-Type: application/json\(part.error ? "; error=\"true\"" : "")\r\n\r\n")
            body.writeString(part.json)
            body.writeString("\r\n")
        }
        body.writeString("--\(boundary)--")
        return Response(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\"\(boundary)\""], body: ResponseBody(byteBuffer: body))
    }
}
