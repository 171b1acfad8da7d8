import Foundation
import Hummingbird
import NIOCore
import SyncNodeStore

/// CouchDB's `multipart/mixed` answer to `GET /{db}/{doc}?open_revs=...`
/// (what its replicator asks for): one part per revision, and
/// `application/json; error="true"` parts for revisions the node does not
/// have. A revision whose attachments travel with it is a `multipart/related`
/// part, its JSON first (those attachments marked `"follows": true`), then
/// each attachment's raw bytes; one without is a plain `application/json` part.
enum MultipartMixed {
    struct Part {
        /// The part's JSON text (attachments to send inline as `data`).
        var json: String
        /// A `{"missing": rev}` part.
        var error: Bool
    }

    static func response(_ parts: [Part]) throws -> Response {
        let boundary = Self.boundary()
        var body = ByteBuffer()
        for part in parts {
            body.writeString("--\(boundary)\r\n")
            if !part.error, WireDocument.contains(part.json, "\"data\""), case .dictionary(var doc) = try DocumentValue(json: part.json),
               case .dictionary(var attachments)? = doc["_attachments"],
               // A name goes into a part header: one that could break out of it stays inline in the JSON.
               attachments.keys.allSatisfy({ !$0.unicodeScalars.contains { $0.value < 0x20 || $0 == "\"" || $0 == "\\" } }) {
                // The bytes follow the JSON; each part names its attachment (the reader matches by filename).
                var following: [(name: String, type: String, bytes: Data)] = []
                for (name, value) in attachments.sorted(by: { $0.key < $1.key }) {
                    guard case .dictionary(var entry) = value, case .string(let base64)? = entry["data"],
                          let bytes = Data(base64Encoded: base64) else { continue }
                    entry["data"] = nil
                    entry["follows"] = true
                    attachments[name] = .dictionary(entry)
                    if case .string(let type)? = entry["content_type"] { following.append((name, type, bytes)) } else {
                        following.append((name, "application/octet-stream", bytes))
                    }
                }
                doc["_attachments"] = .dictionary(attachments)
                let inner = Self.boundary()
                body.writeString("Content-Type: multipart/related; boundary=\"\(inner)\"\r\n\r\n")
                body.writeString("--\(inner)\r\nContent-Type: application/json\r\n\r\n")
                body.writeString(DocumentValue.dictionary(doc).toJSON())
                for attachment in following {
                    body.writeString("\r\n--\(inner)\r\nContent-Disposition: attachment; filename=\"\(attachment.name)\"\r\n")
                    let type = attachment.type.unicodeScalars.contains { $0.value < 0x20 } ? "application/octet-stream" : attachment.type
                    body.writeString("Content-Type: \(type)\r\nContent-Length: \(attachment.bytes.count)\r\n\r\n")
                    body.writeBytes(attachment.bytes)
                }
                body.writeString("\r\n--\(inner)--\r\n")
            } else {
                body.writeString("Content-Type: application/json\(part.error ? "; error=\"true\"" : "")\r\n\r\n")
                body.writeString(part.json)
                body.writeString("\r\n")
            }
        }
        body.writeString("--\(boundary)--")
        return Response(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\"\(boundary)\""], body: ResponseBody(byteBuffer: body))
    }

    private static func boundary() -> String {
        WireID.random()
    }
}
