import Foundation
import Synchronization

/// A `syncnode serve` child process, started in a data directory of its own and ready once
/// it printed its pairing URL.
public final class ServeProcess: @unchecked Sendable {
    /// Why a node did not start.
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let process = Process()
    public let directory: URL
    /// The listener's port, from the pairing URL.
    public let port: Int
    /// The pairing URL the node printed.
    public let url: URLComponents
    private let stderr: URL

    /// A node on loopback signing in `user` (its password passed as scripts should, in SYNCNODE_PASSWORD).
    public convenience init(user: String, password: String, arguments: [String] = []) throws {
        try self.init(arguments: ["--host", "127.0.0.1", "--user", user] + arguments, environment: ["SYNCNODE_PASSWORD": password])
    }

    /// `syncnode serve ARGUMENTS` in `directory` (default: a new one).
    public init(arguments: [String], directory: URL? = nil, environment: [String: String] = [:]) throws {
        let directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-serve-\(UUID().uuidString)")
        self.directory = directory
        stderr = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-serve-\(UUID().uuidString).log")
        process.executableURL = try syncnodeExecutable()
        process.arguments = ["--dir", directory.path, "serve"] + arguments
        // A served process hashes with its own seed, as a user's would (the build scripts fix it for SwiftPM).
        var inherited = ProcessInfo.processInfo.environment
        inherited["SWIFT_DETERMINISTIC_HASHING"] = nil
        process.environment = inherited.merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        guard FileManager.default.createFile(atPath: stderr.path, contents: nil) else {
            throw StartFailure(description: "cannot create \(stderr.path)")
        }
        process.standardError = try FileHandle(forWritingTo: stderr)
        try process.run()
        // serve's first line, once it is ready: "syncnode: listening on <pairing URL>".
        let text = Self.firstLine(of: process, output: out)
        guard text.hasPrefix("syncnode: listening on "),
              let url = URLComponents(string: String(text.dropFirst(23)).trimmingCharacters(in: .whitespacesAndNewlines)),
              let port = url.port,
              url.queryItems?.contains(where: { $0.name == "fp" }) == true,
              url.queryItems?.contains(where: { $0.name == "uuid" }) == true else {
            process.terminate()
            throw StartFailure(description: "serve printed \(text.debugDescription); stderr: \((try? String(contentsOf: stderr, encoding: .utf8)) ?? "")")
        }
        self.port = port
        self.url = url
    }

    /// The node's certificate, for clients that trust it.
    public var certificate: URL { directory.appendingPathComponent(".node/tls/cert.pem") }

    /// What the node wrote on stderr so far.
    public var errors: String { (try? String(contentsOf: stderr, encoding: .utf8)) ?? "" }

    /// SIGTERM, and the exit status.
    public func stop(keepingDirectory: Bool = false) -> Int32 {
        process.terminate()
        process.waitUntilExit()
        if !keepingDirectory { try? FileManager.default.removeItem(at: directory) }
        try? FileManager.default.removeItem(at: stderr)
        return process.terminationStatus
    }

    /// The first line a child process writes to `output`, or what it wrote before
    /// ending or before `seconds` passed (then it is terminated: a blocked read ends).
    public static func firstLine(of process: Process, output: Pipe, within seconds: Double = 30) -> String {
        let done = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            if !done.withLock({ $0 }) { process.terminate() }
        }
        defer { done.withLock { $0 = true } }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = PipeIO.nextChunk(output.fileHandleForReading)
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        return String(String(decoding: line, as: UTF8.self).prefix { $0 != "\n" })
    }
}
