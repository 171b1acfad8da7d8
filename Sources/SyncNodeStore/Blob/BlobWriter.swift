import Crypto
import Foundation

/// Content written into a database's blob store piece by piece (an attachment arriving over
/// the network), its digests computed as it goes, so nothing holds the whole content in memory.
///
/// The pieces go to a temporary file; ``finish()`` names it after its digest (or drops it when
/// the store has that content already). A writer abandoned, or a process killed, leaves no
/// partial blob under a real name: temporary files are removed when the database opens.
package final class BlobWriter {
    private let store: BlobStore
    private let temp: URL
    private let handle: FileHandle
    private var sha1 = Insecure.SHA1()
    private var md5 = Insecure.MD5()
    private var done = false
    /// The bytes written so far.
    package private(set) var length = 0

    init(store: BlobStore) throws {
        self.store = store
        temp = store.tempURL()
        guard FileManager.default.createFile(atPath: temp.path, contents: nil),
              let handle = FileHandle(forWritingAtPath: temp.path) else {
            throw StoreError.io("cannot create a temporary blob file in \(store.directory.path)")
        }
        self.handle = handle
    }

    deinit { if !done { abandon() } }

    /// Appends the next piece.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be written (a full disk).
    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        sha1.update(bufferPointer: bytes)
        md5.update(bufferPointer: bytes)
        do {
            try handle.write(contentsOf: bytes)
        } catch {
            throw StoreError.io("writing blob content: \(error.localizedDescription)")
        }
        length += bytes.count
    }

    /// Puts the content in place under its digest and returns the digest (`sha1-...`); its
    /// `md5-` wire digest is kept beside it.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be completed or renamed.
    package func finish() throws -> String {
        done = true
        do {
            try handle.synchronize()
            try handle.close()
        } catch {
            try? FileManager.default.removeItem(at: temp)
            throw StoreError.io("completing blob content: \(error.localizedDescription)")
        }
        let digest = "sha1-" + Data(sha1.finalize()).base64EncodedString()
        try store.adopt(temp, digest: digest, md5: "md5-" + Data(md5.finalize()).base64EncodedString())
        return digest
    }

    /// Drops what was written.
    package func abandon() {
        done = true
        try? handle.close()
        try? FileManager.default.removeItem(at: temp)
    }
}
