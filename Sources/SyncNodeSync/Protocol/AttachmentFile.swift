import Foundation
import SyncNodeStore

/// An attachment's content as a blob file on this machine, travelling beside a
/// ``WireRevision`` whose `_attachments` entry says `"follows": true`.
///
/// Replication moves attachments this way instead of base64 inside JSON: a push
/// streams the file into a `multipart/related` request, a pull streams the peer's
/// answer into the blob store before the document is written, and neither ever
/// holds the content in memory.
struct AttachmentFile: Sendable {
    /// The content's key in a blob store (`sha1-...`).
    let digest: String
    /// The `md5-` digest peers exchange.
    let md5: String
    let length: Int
    /// The blob file, in the store of the collection it came from.
    let url: URL
    /// The attachment's MIME type, for the part that carries it.
    let contentType: String

    /// The blob `digest` of `collection`, when its content is there.
    init?(digest: String, contentType: String, in collection: DocumentCollection) {
        guard let (url, size) = collection.blobFileAndLength(digest: digest), let md5 = collection.blobMD5(digest: digest) else { return nil }
        self.digest = digest
        self.md5 = md5
        length = size
        self.url = url
        // It goes into a part header: a type that could break out of it is left generic.
        self.contentType = contentType.unicodeScalars.contains { $0.value < 0x20 } ? "application/octet-stream" : contentType
    }

    /// Makes sure `collection` holds the content: a file of another database's store
    /// (local-to-local replication) is copied in a piece at a time.
    func store(in collection: DocumentCollection) throws {
        guard collection.blobFile(digest: digest) == nil else { return }
        let writer = try collection.blobWriter()
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            writer.abandon()
            throw CouchError(status: 500, error: "attachment_missing", reason: "the attachment file \(url.lastPathComponent) is gone")
        }
        defer { try? handle.close() }
        do {
            while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty {
                try piece.withUnsafeBytes { try writer.append($0) }
            }
        } catch {
            writer.abandon()
            throw error
        }
        _ = try writer.finish { md5, _ in
            guard md5 == self.md5 else {
                throw CouchError(status: 500, error: "attachment_changed", reason: "the attachment file \(url.lastPathComponent) changed while it was copied")
            }
        }
    }

    /// Checks content received for the `_attachments` entry `entry` (named `name`) against what
    /// the entry declares: its `length` and, unless it travelled encoded, its `md5-` digest.
    static func verify(md5: String, length: Int, against entry: [String: DocumentValue], name: String) throws {
        if case .int(let declared)? = entry["length"], declared != length {
            throw CouchError.badRequest("attachment '\(name)': \(length) bytes arrived, the document declares \(declared)")
        }
        var encoded = false
        if case .string(let encoding)? = entry["encoding"], encoding != "identity" { encoded = true }
        // CouchDB's digest covers the content as it stores it (gzip for text types), which a
        // decoded download cannot match: such attachments are checked by length alone.
        if !encoded, case .string(let digest)? = entry["digest"], digest.hasPrefix("md5-"), digest != md5 {
            throw CouchError.badRequest("attachment '\(name)': the content does not match its digest \(digest)")
        }
    }
}
