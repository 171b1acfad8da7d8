import CWriteback
import Crypto
import Foundation

/// Content written into a database's blob store piece by piece (an attachment arriving over
/// the network), its digests computed as it goes, so nothing holds the whole content in memory.
///
/// The pieces go to a temporary file; ``finish(verify:)`` names it after its digest (or drops it
/// when the store has that content already), or ``finish(into:verify:)`` leaves that to a
/// ``BlobBatch``. A writer abandoned, or a process killed, leaves no
/// partial blob under a real name: temporary files an hour old are removed when the database opens.
package final class BlobWriter {
    private let store: BlobStore
    private let temp: URL
    private let handle: FileHandle
    private var sha1 = Insecure.SHA1()
    private var md5 = Insecure.MD5()
    private var done = false
    /// Pieces not yet written: network reads and multipart parts arrive in small slices,
    /// and a write per slice would cost a system call each.
    private var pending: [UInt8] = []
    private static let flushSize = 256 << 10
    /// The bytes written so far.
    package private(set) var length = 0

    init(store: BlobStore) throws {
        self.store = store
        (temp, handle) = try store.createTemporaryFile()
    }

    deinit { if !done { abandon() } }

    /// Appends the next piece.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be written (a full disk).
    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        sha1.update(bufferPointer: bytes)
        md5.update(bufferPointer: bytes)
        pending.append(contentsOf: bytes)
        length += bytes.count
        if pending.count >= Self.flushSize { try flush() }
    }

    private func flush() throws {
        do {
            try handle.write(contentsOf: pending)
        } catch {
            throw StoreError.io("writing blob content: \(error.localizedDescription)")
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Puts the content in place under its digest, durable, its name too, and returns the
    /// digest (`sha1-...`); its `md5-` wire digest is kept beside it.
    ///
    /// `verify` sees the content's `md5-` digest and length first; when it throws, nothing is
    /// kept and its error is rethrown (content that is not what its sender declared never
    /// becomes a blob).
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be completed or renamed, or the folder
    ///   not synced (the blob is then in place, its name perhaps not durable); or what `verify` throws.
    package func finish(verify: (_ md5: String, _ length: Int) throws -> Void = { _, _ in }) throws -> String {
        let written = try complete(verify: verify) {
            do {
                try handle.synchronize()
            } catch {
                throw StoreError.io("completing blob content: \(error.localizedDescription)")
            }
        }
        try store.adopt(written.temp, digest: written.digest, md5: written.md5)
        try store.syncDirectory()
        return written.digest
    }

    /// Completes the content without waiting for the disk and adds it to `batch`: its writeback
    /// starts, and it keeps its temporary name until the batch has made it durable (a name is a
    /// promise of its content: after a power cut, a named file emptied by delayed allocation
    /// would pass for it for good). A pull finishes its batch's attachments so, and does not
    /// wait for the disk once per attachment.
    ///
    /// `verify` is as for ``finish(verify:)``.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be completed, or an earlier blob of
    ///   the batch not placed; or what `verify` throws.
    package func finish(into batch: BlobBatch, verify: (_ md5: String, _ length: Int) throws -> Void) throws -> WrittenBlob {
        let written = try complete(verify: verify) {
            // Advice only: the sync at placement makes it durable whatever this does.
            _ = syncnode_start_writeback(handle.fileDescriptor)
        }
        try batch.add(written)
        return written
    }

    /// Writes what is pending, checks it with `verify`, runs `end` on the file and closes it;
    /// on a failure nothing is kept.
    private func complete(verify: (_ md5: String, _ length: Int) throws -> Void, end: () throws -> Void) throws -> WrittenBlob {
        let md5 = "md5-" + Data(self.md5.finalize()).base64EncodedString()
        do {
            try flush()
            try verify(md5, length)
            try end()
        } catch {
            abandon()
            throw error
        }
        done = true
        try? handle.close()
        return WrittenBlob(digest: "sha1-" + Data(sha1.finalize()).base64EncodedString(), md5: md5, length: length, temp: temp)
    }

    /// Drops what was written.
    package func abandon() {
        done = true
        try? handle.close()
        try? FileManager.default.removeItem(at: temp)
    }
}
