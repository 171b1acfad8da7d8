import Foundation

/// An advisory lock (`flock`) on a `.lock` file beside a file that several processes
/// read, change and write back (`syncnode user`, `syncnode trust`, a running node):
/// without it, two such updates at once could each undo the other's.
package enum FileLock {
    package static func withLock<T>(beside file: URL, _ body: () throws -> T) throws -> T {
        let path = file.path + ".lock"
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SyncError.invalidConfiguration("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw SyncError.invalidConfiguration("cannot lock \(path): \(String(cString: strerror(errno)))") }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

/// Writes a file that only its owner may read (0600) and that readers see whole or not at all:
/// the text goes to a temporary file beside it, renamed over it.
package enum PrivateFile {
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be written or replaced.
    package static func write(_ text: String, to file: URL) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent)-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw SyncError.invalidConfiguration("cannot write \(temporary.path)")
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw SyncError.invalidConfiguration("cannot replace \(file.path): \(reason)")
        }
    }
}
