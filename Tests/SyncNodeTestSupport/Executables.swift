import Foundation

/// The package's root folder, found from this file's path.
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A file the tests need that is missing, with what to do about it.
public struct MissingExecutable: Error, CustomStringConvertible {
    public let description: String
}

/// The `syncnode` executable: `$SYNCNODE_BIN` when set, else the one `swift build` made
/// (the test targets depend on it, so `swift test` builds it too).
public func syncnodeExecutable() throws -> URL {
    if let path = ProcessInfo.processInfo.environment["SYNCNODE_BIN"], !path.isEmpty {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw MissingExecutable(description: "SYNCNODE_BIN=\(path) is not an executable") }
        return URL(fileURLWithPath: path)
    }
    // The test bundle lives in the build's bin folder, beside the products.
    let candidates = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()]
        .map { $0.appendingPathComponent("syncnode") }
        + ["debug", "release"].map { packageRoot.appendingPathComponent(".build/\($0)/syncnode") }
    if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) { return found }
    throw MissingExecutable(description: "no syncnode executable: run `swift build` (or set SYNCNODE_BIN)")
}

/// A file under the package root that scripts/test.sh installs (the Python clients' virtualenv, say).
public func packageExecutable(_ relative: String) throws -> URL {
    let url = packageRoot.appendingPathComponent(relative)
    guard FileManager.default.isExecutableFile(atPath: url.path) else {
        throw MissingExecutable(description: "\(relative) is missing: run scripts/test.sh (it installs the Python clients)")
    }
    return url
}

/// Reads and writes of a child's pipes that go on when a signal interrupts them. Foundation's
/// `readDataToEndOfFile()`, `availableData` and `write(_:)` stop the whole process on any error
/// (a `try!`), and one did on EINTR while a whole-suite run read its children.
public enum PipeIO {
    /// Everything until the end of file (what came before, if the pipe fails).
    public static func readToEnd(_ handle: FileHandle) -> Data {
        var data = Data()
        while true {
            let chunk = nextChunk(handle)
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// The next bytes, once some came; empty at the end of file or on an error.
    public static func nextChunk(_ handle: FileHandle) -> Data {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let (n, error) = buffer.withUnsafeMutableBytes { (read(handle.fileDescriptor, $0.baseAddress, $0.count), errno) }
            if n >= 0 { return Data(buffer[..<n]) }
            if error != EINTR { return Data() }
        }
    }

    /// Writes all of `data`; stops quietly when the reader is gone (a child that exited before
    /// reading its input: EPIPE, with SIGPIPE ignored here, as NIO ignores it in a process with sockets).
    public static func writeAll(_ data: Data, to handle: FileHandle) {
        _ = ignoringBrokenPipes
        let bytes = [UInt8](data)
        var written = 0
        while written < bytes.count {
            let (n, error) = bytes[written...].withUnsafeBytes { (write(handle.fileDescriptor, $0.baseAddress, $0.count), errno) }
            if n > 0 {
                written += n
            } else if n < 0, error == EINTR {
                continue
            } else {
                return
            }
        }
    }

    private static let ignoringBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
}

/// A child process run to its end: its exit status and what it wrote.
public enum ChildProcess {
    /// `stdinFile`, when given, is the child's stdin instead of `stdin`'s text (a file or a folder,
    /// opened for reading).
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil, stdinFile: URL? = nil
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        // Never the test runner's own stdin: a child that reads it gets `stdin` or an end of file.
        // Both would leave the text in a pipe no one reads.
        precondition(stdin == nil || stdinFile == nil, "a child's stdin is a text or a file, not both")
        if let stdinFile {
            process.standardInput = try FileHandle(forReadingFrom: stdinFile)
        } else {
            process.standardInput = input
        }
        try process.run()
        if let stdin { PipeIO.writeAll(Data(stdin.utf8), to: input.fileHandleForWriting) }
        try input.fileHandleForWriting.close()
        // Both pipes drain at once: a child filling one while the other is read would block forever.
        let stderr = Shared(Data())
        let drained = DispatchGroup()
        DispatchQueue.global().async(group: drained) { stderr.withLock { $0 = PipeIO.readToEnd(err.fileHandleForReading) } }
        let stdout = PipeIO.readToEnd(out.fileHandleForReading)
        drained.wait()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr.withLock { $0 }, as: UTF8.self))
    }

    /// The same, off Swift's cooperative threads: an in-process listener the child talks to needs them
    /// (on 2 cores, two tests blocked in a child's read left none, and child and listener waited on each other).
    public static func runDetached(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil, stdinFile: URL? = nil
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Swift.Result { try run(executable, arguments, environment: environment, stdin: stdin, stdinFile: stdinFile) })
            }
        }
    }
}
