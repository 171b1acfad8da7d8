import SyncNodeStore

/// An attachment received into a ``BlobBatch``: its content checked, not yet in place. Once
/// ``BlobBatch/place()`` has placed the batch, ``file(in:)`` is its file.
struct WrittenAttachment: Sendable {
    let blob: WrittenBlob
    /// The attachment's MIME type, as its document declares it.
    let contentType: String

    /// The placed blob's file in `collection`.
    /// - Throws: `CouchError` 500 when it cannot be read back (removed in between).
    func file(in collection: DocumentCollection) throws -> AttachmentFile {
        guard let file = AttachmentFile(digest: blob.digest, contentType: contentType, in: collection) else {
            throw CouchError(status: 500, error: "attachment_missing", reason: "attachment content \(blob.md5) was stored but cannot be read back")
        }
        return file
    }
}
