import CompressNIO
import Crypto
import Foundation
import NIOCore
import SyncNodeStore

/// Turns an incoming `_attachments` object into stored form: inline data
/// goes to the blob store, content that followed as a file (``AttachmentFile``)
/// is in it already; stubs are resolved against the revision the new one
/// builds on (so unchanged attachments never travel again).
enum AttachmentIntake {
    /// The body to store: `body` plus `_attachments` (blob metadata by name)
    /// for attachments that are not property blobs (`blob_/...`).
    ///
    /// `generation` is the new revision's. An attachment with new data gets it
    /// as its `revpos`, unless `replicated` (`new_edits=false`), where the
    /// sender's `revpos` is kept; a stub keeps the one it had.
    static func resolve(
        _ attachments: [String: DocumentValue], body: [String: DocumentValue],
        previousBody: String?, generation: Int, replicated: Bool, collection: DocumentCollection,
        files: [String: AttachmentFile] = [:]
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
            var encoding = "identity"
            if case .string(let e)? = entry["encoding"] { encoding = e }
            guard encoding == "identity" || encoding == "gzip" else {
                // Storing bytes in an encoding this node cannot decode would corrupt the attachment.
                throw CouchError.unsupportedMediaType("attachment '\(name)' is \(encoding)-encoded; send it decoded or gzip-encoded")
            }
            var revpos = Int64(generation)
            if replicated, case .int(let given)? = entry["revpos"], given >= 0 { revpos = given }
            let metadata: DocumentValue
            if case .bool(true)? = entry["follows"] {
                guard let file = files[name] else {
                    throw CouchError.badRequest("attachment '\(name)' is marked follows, but no part carried its content")
                }
                try file.store(in: collection)
                metadata = [
                    "@type": "blob", "digest": .string(file.digest), "length": .int(Int64(file.length)),
                    "content_type": entry["content_type"] ?? "application/octet-stream", "revpos": .int(revpos),
                ]
            } else if case .string(let base64)? = entry["data"] {
                guard var data = Data(base64Encoded: base64) else {
                    throw CouchError.badRequest("attachment '\(name)': data is not valid base64")
                }
                // The sender's MD5 covers the bytes as sent (CouchDB: gzip-encoded ones); a mismatch is corruption in transit.
                var checkedMD5: String?
                if case .string(let digest)? = entry["digest"], digest.hasPrefix("md5-") {
                    guard digest == "md5-" + Data(Insecure.MD5.hash(data: data)).base64EncodedString() else {
                        throw CouchError.badRequest("attachment '\(name)': the content does not match its digest \(digest)")
                    }
                    checkedMD5 = digest
                }
                // Stored decoded: blobs are content-addressed by their content, whatever encoding carried it.
                if encoding == "gzip" {
                    var declared: Int64?
                    if case .int(let n)? = entry["length"] { declared = n }
                    data = try gunzip(data, name: name, declaredLength: declared)
                    checkedMD5 = nil
                }
                let digest = try collection.storeBlobContent(data, md5: checkedMD5)
                metadata = [
                    "@type": "blob", "digest": .string(digest), "length": .int(Int64(data.count)),
                    "content_type": entry["content_type"] ?? "application/octet-stream", "revpos": .int(revpos),
                ]
            } else if case .bool(true)? = entry["stub"] {
                guard let known = lookup(name, in: previous) else {
                    throw CouchError(status: 412, error: "missing_stub", reason: "Invalid attachment stub in '\(name)': no such attachment in the parent revision")
                }
                metadata = known
            } else {
                throw CouchError.badRequest("attachment '\(name)' has neither data, follows nor stub")
            }
            if !name.hasPrefix("blob_/") { stored[name] = metadata }
        }
        var body = body
        if !stored.isEmpty { body[DocumentCollection.attachmentsKey] = .dictionary(stored) }
        return body
    }

    /// The decoded content of a gzip-encoded attachment. CouchDB sends text
    /// attachments so, with `length` the decoded size; a body that decodes to
    /// more than that (or, undeclared, more than 1 GiB) is refused, so a small
    /// upload cannot unpack into an unbounded one.
    static func gunzip(_ data: Data, name: String, declaredLength: Int64?) throws -> Data {
        var buffer = ByteBuffer(data: data)
        let limit = declaredLength.map { Int(clamping: $0) } ?? 1 << 30
        do {
            let decoded = try buffer.decompress(with: .gzip(), maxSize: max(limit, 1))
            // zlib checks the trailer's CRC only if the stream reaches its end, and a stream cut short decodes
            // without an error: its last 4 bytes must be the trailer's length (mod 2^32) of what was decoded.
            let size = data.suffix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard data.count >= 18, size == UInt32(truncatingIfNeeded: decoded.readableBytes) else {
                throw CouchError.badRequest("attachment '\(name)': the gzip-encoded data is truncated")
            }
            if let declaredLength, decoded.readableBytes != declaredLength {
                throw CouchError.badRequest("attachment '\(name)': gzip data decodes to \(decoded.readableBytes) bytes, not the declared length \(declaredLength)")
            }
            return Data(buffer: decoded)
        } catch let error as CouchError {
            throw error
        } catch {
            throw CouchError.badRequest("attachment '\(name)': the gzip-encoded data cannot be decoded (\(error))")
        }
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
