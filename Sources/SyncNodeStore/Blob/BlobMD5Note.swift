import CXattr
import Foundation

/// Where a blob's `md5-` wire digest is kept once computed: an extended attribute of the blob's
/// own file (`user.syncnode.md5`), or, on a file system without user attributes (tmpfs before
/// Linux 6.6, some network mounts), a `<blob>.md5` file beside it.
///
/// The attribute costs no file of its own. A pull of many small attachments created two files
/// per attachment with the sidecar, and creating files was half of such a pull's time in perf
/// (`ext4_create`, mostly the inode allocator).
enum BlobMD5Note {
    private static let attribute = "user.syncnode.md5"

    /// The digest kept for the blob at `url`, from its attribute or its sidecar; nil when neither
    /// holds one (a copy that dropped attributes: it is computed again).
    static func read(beside url: URL) -> String? {
        if let saved = attribute(of: url) { return saved }
        if let saved = try? String(contentsOf: sidecar(of: url), encoding: .utf8), saved.hasPrefix("md5-") { return saved }
        return nil
    }

    /// The digest in the blob's attribute alone.
    static func attribute(of url: URL) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let length = buffer.withUnsafeMutableBytes { getAttribute(url.path, $0) }
        guard length > 0 else { return nil }
        let saved = String(decoding: buffer[..<length], as: UTF8.self)
        return saved.hasPrefix("md5-") ? saved : nil
    }

    /// Keeps `md5` with the blob at `url`. Best effort: without it, the digest is computed again
    /// when next asked.
    static func write(_ md5: String, beside url: URL, temporaryFile: () throws -> (URL, FileHandle)) {
        if Array(md5.utf8).withUnsafeBytes({ setAttribute(url.path, $0) }) { return }
        guard let (temp, handle) = try? temporaryFile() else { return }
        let written = (try? handle.write(contentsOf: Data(md5.utf8))) != nil
        try? handle.close()
        if !written || rename(temp.path, sidecar(of: url).path) != 0 { try? FileManager.default.removeItem(at: temp) }
    }

    /// The sidecar file of a blob (kept by earlier versions, and where attributes are missing).
    static func sidecar(of url: URL) -> URL {
        url.appendingPathExtension("md5")
    }

    private static func getAttribute(_ path: String, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        #if canImport(Darwin)
        getxattr(path, attribute, buffer.baseAddress, buffer.count, 0, 0)
        #else
        getxattr(path, attribute, buffer.baseAddress, buffer.count)
        #endif
    }

    private static func setAttribute(_ path: String, _ value: UnsafeRawBufferPointer) -> Bool {
        #if canImport(Darwin)
        setxattr(path, attribute, value.baseAddress, value.count, 0, 0) == 0
        #else
        setxattr(path, attribute, value.baseAddress, value.count, 0) == 0
        #endif
    }
}
