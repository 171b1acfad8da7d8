import Foundation
import Synchronization

/// Blobs written for a batch of documents (``BlobWriter/finish(into:verify:)``), each content
/// made durable before its name, the names durable together by ``place()``: call it before
/// saving the documents that refer to them. Whatever was written into it is placed then, even
/// when the batch failed on the way: a retry finds that content here.
///
/// A blob's writeback starts as it is finished; it is synced and named once ``lag`` later
/// blobs were finished, when the disk has usually written it already, on a queue of the
/// batch's own, so neither the downloads nor ``place()`` wait for the disk once per blob.
package final class BlobBatch: Sendable {
    private let store: BlobStore
    private let state = Mutex(State())
    /// Where blobs are synced and named while the downloads go on: the waits for the disk
    /// overlap the network and the parsing instead of stopping the download that finished one.
    private let placer = DispatchQueue(label: "syncnode.blob-batch")
    /// Blobs finished and not yet handed to the queue, at most: a few megabytes of small
    /// attachments. The queue's own backlog is not bounded: each is a path and two digests,
    /// and its disk writes began as the blob was finished.
    static let lag = 16

    private struct State {
        var waiting: [WrittenBlob] = []
        /// Whether any blob was added: a batch that wrote none (its attachments all here
        /// already) has no name to make durable, and ``place()`` syncs nothing.
        var wroteAny = false
        /// The first error placing a blob on the queue met.
        var failure: (any Error)?
    }

    init(store: BlobStore) {
        self.store = store
    }

    /// Whether no blob waits to be placed.
    package var isEmpty: Bool { state.withLock { $0.waiting.isEmpty } }

    /// Adds a finished blob, and has the oldest placed when more than ``lag`` wait.
    /// - Throws: ``StoreError/io(_:)`` when an earlier one could not be placed (it was
    ///   dropped): there is no point downloading more of a batch that will fail.
    func add(_ blob: WrittenBlob) throws {
        let (due, failure) = state.withLock { state -> (WrittenBlob?, (any Error)?) in
            state.waiting.append(blob)
            state.wroteAny = true
            return (state.waiting.count > Self.lag ? state.waiting.removeFirst() : nil, state.failure)
        }
        if let due {
            placer.async {
                do {
                    try self.store.adopt([due], syncingFolder: false)
                } catch {
                    self.state.withLock { $0.failure = $0.failure ?? error }
                }
            }
        }
        if let failure { throw failure }
    }

    /// Places every blob written and not yet placed, then makes the blob folder durable: the
    /// names of all the batch's blobs, placed here or before.
    /// - Throws: ``StoreError/io(_:)`` when one cannot be synced or named (it is dropped, the
    ///   others are placed), or the folder cannot be synced.
    package func place() throws {
        // The blobs being placed on the queue first: the folder's sync below covers their names.
        placer.sync {}
        let (blobs, wroteAny, failure) = state.withLock { state in
            defer { (state.waiting, state.failure) = ([], nil) }
            return (state.waiting, state.wroteAny, state.failure)
        }
        guard wroteAny else { return }
        try store.adopt(blobs, syncingFolder: true)
        if let failure { throw failure }
    }
}

/// Blob content written and checked, not yet durable nor under its name
/// (``BlobWriter/finish(into:verify:)``).
package struct WrittenBlob: Sendable {
    /// The content's key in the blob store (`sha1-...`).
    package let digest: String
    /// The `md5-` digest peers exchange.
    package let md5: String
    package let length: Int
    let temp: URL
}
