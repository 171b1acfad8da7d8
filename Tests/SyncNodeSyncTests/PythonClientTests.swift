import Foundation
import Synchronization
import Testing
@testable import SyncNodeSync

/// Independent CouchDB clients from PyPI against a real `syncnode serve`
/// process over HTTPS with Basic auth (scripts in Tests/interop).
@Suite(.serialized) struct PythonClientTests {
    /// The first line a child process writes to `output`, or what it wrote before
    /// ending or before `seconds` passed (then it is terminated: a blocked read ends).
    static func firstLine(of process: Process, output: Pipe, within seconds: Double = 30) -> String {
        let done = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            if !done.withLock({ $0 }) { process.terminate() }
        }
        defer { done.withLock { $0 = true } }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        return String(String(decoding: line, as: UTF8.self).prefix { $0 != "\n" })
    }

    /// A `syncnode serve` child process.
    final class Node: @unchecked Sendable {
        let process = Process()
        let stderr = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-serve-\(UUID().uuidString).log")
        let directory: URL
        var port = 0
        /// The pairing URL the node printed.
        var url = URLComponents()

        /// A node on loopback signing in `user` (its password passed as scripts should, in SYNCNODE_PASSWORD).
        convenience init(user: String, password: String, arguments: [String] = []) throws {
            try self.init(arguments: ["--host", "127.0.0.1", "--user", user] + arguments, environment: ["SYNCNODE_PASSWORD": password])
        }

        /// `syncnode serve ARGUMENTS` in `directory` (default: a new one).
        init(arguments: [String], directory: URL? = nil, environment: [String: String] = [:]) throws {
            self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-serve-\(UUID().uuidString)")
            process.executableURL = try syncnodeExecutable()
            process.arguments = ["--dir", self.directory.path, "serve"] + arguments
            // A served process hashes with its own seed, as a user's would (the build scripts fix it for SwiftPM).
            var inherited = ProcessInfo.processInfo.environment
            inherited["SWIFT_DETERMINISTIC_HASHING"] = nil
            process.environment = inherited.merging(environment) { $1 }
            let out = Pipe()
            process.standardOutput = out
            guard FileManager.default.createFile(atPath: stderr.path, contents: nil) else {
                throw SyncError.invalidConfiguration("cannot create \(stderr.path)")
            }
            process.standardError = try FileHandle(forWritingTo: stderr)
            try process.run()
            // The contract: a first line "syncnode: listening on <pairing URL>" when ready.
            let text = PythonClientTests.firstLine(of: process, output: out)
            guard text.hasPrefix("syncnode: listening on "),
                  let url = URLComponents(string: String(text.dropFirst(23)).trimmingCharacters(in: .whitespacesAndNewlines)),
                  let port = url.port else {
                process.terminate()
                throw SyncError.listenerFailed("serve printed \(text.debugDescription); stderr: \((try? String(contentsOf: stderr, encoding: .utf8)) ?? "")")
            }
            self.port = port
            self.url = url
            #expect(url.queryItems?.contains { $0.name == "fp" } == true)
            #expect(url.queryItems?.contains { $0.name == "uuid" } == true)
        }

        var certificate: URL { directory.appendingPathComponent(".node/tls/cert.pem") }

        /// What the node wrote on stderr so far.
        var errors: String { (try? String(contentsOf: stderr, encoding: .utf8)) ?? "" }

        /// SIGTERM, and the exit status.
        func stop(keepingDirectory: Bool = false) -> Int32 {
            process.terminate()
            process.waitUntilExit()
            if !keepingDirectory { try? FileManager.default.removeItem(at: directory) }
            try? FileManager.default.removeItem(at: stderr)
            return process.terminationStatus
        }
    }

    /// Runs a script to its end (killed after `timeout` seconds: a hung client must not hang
    /// the suite) and returns its exit status and everything it printed.
    static func runScript(_ python: URL, _ arguments: [String], timeout: Double = 120) throws -> (status: Int32, output: String) {
        let run = Process()
        run.executableURL = python
        run.arguments = arguments
        let output = Pipe()
        run.standardOutput = output
        run.standardError = output
        try run.run()
        let watchdog = DispatchWorkItem { if run.isRunning { run.interrupt(); run.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        watchdog.cancel()
        return (run.terminationStatus, text)
    }

    @Test(arguments: ["check_couchdb_python.py", "check_pycouchdb.py", "check_aiocouch.py"])
    func clientExercisesPass(_ script: String) throws {
        let python = try packageExecutable(".venv/bin/python")
        // pycouchdb splits credentials out of the URL without decoding them, so it gets a plain password.
        let user = "tester", password = script == "check_pycouchdb.py" ? "plain-Pass_123" : "p@ss: wörd"
        let node = try Node(user: user, password: password)
        let (status, text): (Int32, String)
        do {
            (status, text) = try Self.runScript(python, [packageRoot.appendingPathComponent("Tests/interop/\(script)").path,
                                                         "https://localhost:\(node.port)", user, password, node.certificate.path])
        } catch {
            _ = node.stop()
            throw error
        }
        #expect(status == 0, "\(script) failed:\n\(text)")
        #expect(text.contains(": ok"), "\(script) printed:\n\(text)")
        // SIGTERM ends the node cleanly.
        #expect(node.stop() == 0)
    }
}
