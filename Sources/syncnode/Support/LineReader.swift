import Foundation

/// Reads a file (or stdin) line by line in 1 MiB chunks, so imports of any
/// size run in bounded memory.
struct LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    /// Where the unread part of `buffer` starts; consumed bytes are dropped only
    /// when a new chunk is read, so a line costs no copying of the rest.
    private var start = 0
    private var atEOF = false
    private(set) var lineNumber = 0
    /// Bytes read from the file so far (for progress).
    private(set) var bytesRead = 0

    init(handle: FileHandle) { self.handle = handle }

    /// The next line without its newline, or nil at the end.
    mutating func next() throws -> String? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self)
                start = newline + 1
                lineNumber += 1
                return line
            }
            if atEOF {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                lineNumber += 1
                return String(decoding: buffer[start...], as: UTF8.self)
            }
            buffer.removeSubrange(0..<start)
            start = 0
            searchFrom = buffer.count
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { atEOF = true } else { buffer.append(contentsOf: chunk) }
            bytesRead += chunk.count
        }
    }
}
