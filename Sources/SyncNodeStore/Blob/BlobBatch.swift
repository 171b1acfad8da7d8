import Foundation
import Synchronization

/// Blobs written for a batch of documents (``BlobWriter/finish(into:verify:)``), each content
/// made durable before its name, the names durable together by ``place()``: call it before
/// saving the documents that refer to them. Whatever was written into it is placed then, even
/// when the batch failed on the way: a retry finds that content here.
///
/// A blob's writeback starts as it is finished; it is synced and named once ``lag`` later
/// blobs were finished, when the disk has usually written it already, so neither the
/// downloads nor ``place()`` wait for the disk once per blob.
package final class BlobBatch: Sendable {
    private let store: BlobStore
    private let state = Mutex(State())
    /// Blobs finished and not yet synced, at most: a few megabytes of small attachments.
    static let lag = 16

    private struct State {
        var waiting: [WrittenBlob] = []
        /// Whether any blob was added: a batch that wrote none (its attachments all here
        /// already) has no name to make durable, and ``place()`` syncs nothing.
        var wroteAny = false
    }

    init(store: BlobStore) {
        self.store = store
    }

    /// Whether no blob waits to be placed.
    package var isEmpty: Bool { state.withLock { $0.waiting.isEmpty } }

    /// Adds a finished blob, and places the oldest when more than ``lag`` wait.
    /// - Throws: ``StoreError/io(_:)`` when that one cannot be placed (it is dropped).
    func add(_ blob: WrittenBlob) throws {
        let due = state.withLock { state -> WrittenBlob? in
            state.waiting.append(blob)
            state.wroteAny = true
            return state.waiting.count > Self.lag ? state.waiting.removeFirst() : nil
        }
        if let due { try store.adopt([due], syncingFolder: false) }
    }

    /// Places every blob written and not yet placed, then makes the blob folder durable: the
    /// names of all the batch's blobs, placed here or before.
    /// - Throws: ``StoreError/io(_:)`` when one cannot be synced or named (it is dropped, the
    ///   others are placed), or the folder cannot be synced.
    package func place() throws {
        let (blobs, wroteAny) = state.withLock { state in
            defer { state.waiting = [] }
            return (state.waiting, state.wroteAny)
        }
        guard wroteAny else { return }
        try store.adopt(blobs, syncingFolder: true)
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
