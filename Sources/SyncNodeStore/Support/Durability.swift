import Foundation

/// fsync(2) for files and folders the store writes outside SQLite (blobs, copied databases),
/// which SQLite's own syncs do not cover.
enum Durability {
    /// Makes the file or folder at `path` durable: a file's content, a folder's entries.
    /// - Throws: ``StoreError/io(_:)`` when it cannot be opened or the disk refuses.
    static func sync(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            throw StoreError.io("cannot open \(path) to make it durable: \(String(cString: strerror(error)))")
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else {
            let error = errno
            throw StoreError.io("cannot make \(path) durable: \(String(cString: strerror(error)))")
        }
    }

    /// Makes everything under the folder `root` durable, the folder itself and its parent
    /// (which names it) last.
    static func syncTree(at root: URL) throws {
        if let walker = FileManager.default.enumerator(atPath: root.path) {
            for case let relative as String in walker {
                try sync(path: root.appendingPathComponent(relative).path)
            }
        }
        try sync(path: root.path)
        try sync(path: root.deletingLastPathComponent().path)
    }
}
