import SyncNodeStore

/// A peer whose attachments can be read one at a time: where a pull gets the content of the
/// attachment stubs it receives (``AttachmentIntake/pulled(_:wanted:into:from:)``).
protocol AttachmentSource: Sendable {
    /// Streams the content of attachment `name` of revision `rev` of document `id` into `sink`, a
    /// piece at a time as it arrives, never more than `declaredLength` bytes (when given) nor than
    /// this node accepts from a peer.
    ///
    /// - Throws: `CouchError` 404/410 when the peer lacks that content, 502 when it sends more than
    ///   it declared; the peer's other answers and network errors; what `sink` throws.
    func download(
        id: String, rev: String, name: String, declaredLength: Int?, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws

    /// The attachments of several revisions in one answer, each revision's written to
    /// `collection`'s blob store as it arrives, into `batch` (for the caller to place, even
    /// after a failure): those received, by revision and attachment name; nil when the peer
    /// cannot send them so.
    ///
    /// - Throws: `CouchError` 502 for a malformed answer or content that does not match its
    ///   declaration; the peer's other answers and network errors; `StoreError`.
    func downloadAttachments(
        of revisions: [AttachmentRequest], into collection: DocumentCollection, batch: BlobBatch
    ) async throws -> [AttachmentRequest.Key: [String: WrittenAttachment]]?
}

/// A revision whose attachments a pull lacks: those not in revisions `attsSince`.
struct AttachmentRequest: Sendable {
    struct Key: Hashable, Sendable {
        let id: String
        let rev: String
    }

    let key: Key
    let attsSince: [String]
    /// The attachments asked for, by name, with the length each one's stub declares: an answer
    /// may send these and no others.
    let lengths: [String: Int?]
}
