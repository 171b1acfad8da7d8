import Foundation

/// An advisory lock (`flock`) on a `.lock` file beside a file that several processes
/// read, change and write back (`syncnode user`, `syncnode trust`, a running node):
/// without it, two such updates at once could each undo the other's.
enum FileLock {
    static func withLock<T>(beside file: URL, _ body: () throws -> T) throws -> T {
        let path = file.path + ".lock"
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SyncError.invalidConfiguration("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw SyncError.invalidConfiguration("cannot lock \(path): \(String(cString: strerror(errno)))") }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}
