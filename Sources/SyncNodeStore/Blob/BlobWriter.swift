import Crypto
import Foundation

/// Content written into a database's blob store piece by piece (an attachment arriving over
/// the network), its digests computed as it goes, so nothing holds the whole content in memory.
///
/// The pieces go to a temporary file; ``finish(syncingName:verify:)`` names it after its digest (or drops it when
/// the store has that content already). A writer abandoned, or a process killed, leaves no
/// partial blob under a real name: temporary files are removed when the database opens.
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

    /// Puts the content in place under its digest and returns the digest (`sha1-...`); its
    /// `md5-` wire digest is kept beside it.
    ///
    /// `verify` sees the content's `md5-` digest and length first; when it throws, nothing is
    /// kept and its error is rethrown (content that is not what its sender declared never
    /// becomes a blob).
    ///
    /// The content is durable when this returns; its name too when `syncingName` (an fsync of
    /// the blob directory). A caller that finishes many blobs passes false and calls
    /// ``DocumentCollection/makeBlobNamesDurable()`` once, before saving a document that refers
    /// to them.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be completed or renamed, or the folder
    ///   not synced (the blob is then in place, its name perhaps not durable); or what `verify` throws.
    package func finish(syncingName: Bool = true, verify: (_ md5: String, _ length: Int) throws -> Void = { _, _ in }) throws -> String {
        let md5 = "md5-" + Data(self.md5.finalize()).base64EncodedString()
        do {
            try flush()
            try verify(md5, length)
            do {
                try handle.synchronize()
            } catch {
                throw StoreError.io("completing blob content: \(error.localizedDescription)")
            }
        } catch {
            abandon()
            throw error
        }
        done = true
        try? handle.close()
        let digest = "sha1-" + Data(sha1.finalize()).base64EncodedString()
        try store.adopt(temp, digest: digest, md5: md5)
        if syncingName { try store.syncDirectory() }
        return digest
    }

    /// Drops what was written.
    package func abandon() {
        done = true
        try? handle.close()
        try? FileManager.default.removeItem(at: temp)
    }
}
