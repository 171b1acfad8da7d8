import Foundation

/// What `stat` says of a file, to tell when to read it again: a new inode when
/// it is replaced, a new time or size when it is edited in place.
package enum FileStamp {
    package static func of(_ file: URL) -> [Int] {
        var info = stat()
        guard stat(file.path, &info) == 0 else { return [-1] }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return [Int(info.st_ino), Int(info.st_size), Int(modified.tv_sec), Int(modified.tv_nsec)]
    }
}
