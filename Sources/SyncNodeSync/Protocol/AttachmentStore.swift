import Foundation
import SyncNodeStore

/// Turns an incoming `_attachments` object into stored form: inline data
/// goes to the blob store; stubs are resolved against the revision the new
/// one builds on (so unchanged attachments never travel again).
enum AttachmentStore {
    /// The body to store: `body` plus `_attachments` (blob metadata by name)
    /// for attachments that are not property blobs (`blob_/...`).
    static func resolve(
        _ attachments: [String: DocumentValue], body: [String: DocumentValue],
        previousBody: String?, collection: DocumentCollection
    ) throws -> [String: DocumentValue] {
        guard !attachments.isEmpty else { return body }
        let previous: [String: DocumentValue]
        if let previousBody, case .dictionary(let d) = try DocumentValue(json: previousBody) {
            previous = d
        } else {
            previous = [:]
        }
        var stored: [String: DocumentValue] = [:]
        for (name, value) in attachments {
            guard case .dictionary(let entry) = value else {
                throw CouchError.badRequest("attachment '\(name)' must be an object")
            }
            if case .string(let encoding)? = entry["encoding"], encoding != "identity" {
                // Storing the encoded bytes as the content would corrupt the attachment.
                throw CouchError.unsupportedMediaType("attachment '\(name)' is \(encoding)-encoded; send it decoded")
            }
            let metadata: DocumentValue
            if case .string(let base64)? = entry["data"] {
                guard let data = Data(base64Encoded: base64) else {
                    throw CouchError.badRequest("attachment '\(name)': data is not valid base64")
                }
                let digest = try collection.storeBlobContent(data)
                metadata = [
                    "@type": "blob", "digest": .string(digest), "length": .int(Int64(data.count)),
                    "content_type": entry["content_type"] ?? "application/octet-stream",
                ]
            } else if case .bool(true)? = entry["stub"] {
                guard let known = lookup(name, in: previous) else {
                    throw CouchError(status: 412, error: "missing_stub", reason: "Invalid attachment stub in '\(name)': no such attachment in the parent revision")
                }
                metadata = known
            } else {
                throw CouchError.badRequest("attachment '\(name)' has neither data nor stub")
            }
            if !name.hasPrefix("blob_/") { stored[name] = metadata }
        }
        var body = body
        if !stored.isEmpty { body[DocumentCollection.attachmentsKey] = .dictionary(stored) }
        return body
    }

    /// An attachment's metadata in a stored body: by name in `_attachments`,
    /// or for `blob_/<path>` the blob at that property path.
    static func lookup(_ name: String, in body: [String: DocumentValue]) -> DocumentValue? {
        if name.hasPrefix("blob_/") {
            var value: DocumentValue? = .dictionary(body)
            for part in name.dropFirst(6).split(separator: "/", omittingEmptySubsequences: false) {
                switch value {
                case .dictionary(let d)?: value = d[String(part)]
                case .array(let a)?: value = Int(part).flatMap { a.indices.contains($0) ? a[$0] : nil }
                default: value = nil
                }
            }
            if case .blob(let b)? = value { return .blob(b) }
            return nil
        }
        if case .dictionary(let named)? = body[DocumentCollection.attachmentsKey], let meta = named[name] {
            return meta
        }
        return nil
    }
}
