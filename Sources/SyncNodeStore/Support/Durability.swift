import Foundation

/// fsync(2) for files and folders the store writes outside SQLite (blobs, copied databases),
/// which SQLite's own syncs do not cover.
enum Durability {
    /// Makes the file or folder at `path` durable: a file's content, a folder's entries.
    /// - Throws: ``StoreError/io(_:)`` when it cannot be opened or the disk refuses.
    static func sync(path: String) throws {
        // Not blocked by a FIFO (its fsync then fails, a clear error): a tree copied in may hold anything.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
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

    /// Makes everything under the folder `root` durable, the folder itself last (not its
    /// name: that is its parent's).
    /// - Throws: ``StoreError/io(_:)`` when an entry cannot be read or synced.
    static func syncTree(at root: URL) throws {
        var failure: StoreError?
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) { url, error in
            failure = StoreError.io("cannot read \(url.path) to make it durable: \(error.localizedDescription)")
            return false
        }
        while failure == nil, let item = walker?.nextObject() as? URL {
            try sync(path: item.path)
        }
        if let failure { throw failure }
        try sync(path: root.path)
    }
}
