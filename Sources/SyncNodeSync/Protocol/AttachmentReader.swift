import Foundation
import NIOCore

/// An attachment's file read straight into the buffers that go on the wire: one `read(2)`
/// per piece. Foundation's `FileHandle.read(upToCount:)` reads a regular file 4 KB at a
/// time into a `Data` that is then copied again; serving 1,000 attachments of 100 KB made
/// some 28,000 system calls that way.
final class AttachmentReader {
    private let fd: Int32
    private let url: URL
    /// The bytes the file is expected to hold; no more are read.
    private let length: Int
    private var sent = 0

    /// Opens `url`, whose content is `length` bytes.
    /// - Throws: `CouchError` 500: `attachment_missing` when the file is gone,
    ///   `attachment_unreadable` when it cannot be opened (too many open files, permissions).
    init(url: URL, length: Int) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            guard error != ENOENT else {
                throw CouchError(status: 500, error: "attachment_missing", reason: "the attachment file \(url.lastPathComponent) is gone")
            }
            throw CouchError(status: 500, error: "attachment_unreadable", reason: "the attachment file \(url.lastPathComponent) cannot be opened: \(String(cString: strerror(error)))")
        }
        self.fd = fd
        self.url = url
        self.length = length
    }

    deinit { close(fd) }

    /// Whether every byte of the content has been read.
    var isDone: Bool { sent == length }

    /// Appends at most `limit` more bytes of the content to `buffer`.
    /// - Throws: `CouchError` 500 when the file ends before its length, or cannot be read.
    func read(into buffer: inout ByteBuffer, upTo limit: Int) throws {
        let want = min(limit, length - sent)
        guard want > 0 else { return }
        let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { space in
            var n: Int
            repeat { n = Foundation.read(fd, space.baseAddress, want) } while n < 0 && errno == EINTR
            guard n >= 0 else {
                let error = errno
                throw CouchError(status: 500, error: "attachment_unreadable", reason: "the attachment file \(url.lastPathComponent) cannot be read: \(String(cString: strerror(error)))")
            }
            return n
        }
        guard count > 0 else {
            throw CouchError(status: 500, error: "attachment_changed", reason: "the attachment file \(url.lastPathComponent) is shorter than its length")
        }
        sent += count
    }
}
