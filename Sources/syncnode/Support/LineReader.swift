import Foundation

/// Reads a file (or stdin) line by line in 1 MiB chunks, so imports of any
/// size run in bounded memory.
struct LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    private var atEOF = false
    private(set) var lineNumber = 0

    init(handle: FileHandle) { self.handle = handle }

    /// The next line without its newline, or nil at the end.
    mutating func next() throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                lineNumber += 1
                return String(decoding: line, as: UTF8.self)
            }
            if atEOF {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                lineNumber += 1
                return String(decoding: buffer, as: UTF8.self)
            }
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { atEOF = true } else { buffer.append(chunk) }
        }
    }
}
