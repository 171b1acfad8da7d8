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
}
