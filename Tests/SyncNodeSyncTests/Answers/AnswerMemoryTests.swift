import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A real `serve` over a 200 MB database of 25 MB documents: each answer that carries documents
/// is written as it is read, so the node's peak memory grows by a few bodies, not by the answer
/// (before answers were streamed, one `_all_docs?include_docs=true` here took over 500 MB), and
/// four readers at once share one budget instead of adding up.
@Suite(.serialized) struct AnswerMemoryTests {
    static let bodySize = 25 << 20
    static let documents = 8

    /// Resident and peak resident memory of a process, in bytes (Linux).
    static func memory(_ pid: Int32) throws -> (resident: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// Starts a new peak (the kernel's `clear_refs` 5).
    static func resetPeak(_ pid: Int32) throws {
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
    }

    @Test func bigAnswersKeepTheNodeSmall() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-memory-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let node = try NodeDirectory(url: directory)
        let collection = try #require(try node.database("big", create: true)).defaultCollection()
        for i in 0..<Self.documents {
            let text = String(repeating: Character(UnicodeScalar(UInt8(97 + i))), count: Self.bodySize)
            try collection.save(try MutableDocument(id: "doc\(i)", data: ["kind": "big", "text": text]))
        }
        // `_find` through an index: without one, SQLite's own JSON functions read every body to
        // test the selector, and keep the last few parsed (see docs/LIMITS.md).
        try collection.createIndex(ValueIndexConfiguration(["kind"]), name: "kind")
        node.closeAll()

        // A reader silent for a minute is dropped (`--idle-timeout`), and on a loaded 2-core
        // machine this test's reads can wait that long behind the suite's other tests (so
        // its requests may take 10 minutes too).
        let serve = try ServeProcess(arguments: ["--anonymous", "--no-advertise", "--no-browse", "--qr", "none", "--idle-timeout", "600"],
                                     directory: directory)
        defer { _ = serve.stop(keepingDirectory: true) }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(serve.certificate.path)
        tls.certificateVerification = .noHostnameVerification
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(tlsConfiguration: tls))
        /// The bytes of an answer, read and dropped as they come.
        @Sendable func drain(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> Int {
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(serve.port)\(path)")
            request.method = method
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            var count = 0
            do {
                let response = try await client.execute(request, timeout: .seconds(600))
                #expect(response.status == .ok, "\(path)")
                for try await piece in response.body { count += piece.readableBytes }
            } catch {
                Issue.record(error, "\(method) \(path) broke off after \(count) bytes (node running: \(serve.process.isRunning)); it logged: \(serve.errors.suffix(3000))")
                throw error
            }
            return count
        }
        try await withCleanup({ try? await client.shutdown() }) {
            let pid = serve.process.processIdentifier
            let everything = Self.documents * Self.bodySize
            let asks: [(HTTPMethod, String, String?)] = [
                (.GET, "/big/_all_docs?include_docs=true", nil),
                (.GET, "/big/_changes?include_docs=true", nil),
                (.POST, "/big/_find", #"{"selector":{"kind":"big"}}"#),
                (.POST, "/big/_bulk_get", #"{"docs":[\#((0..<Self.documents).map { #"{"id":"doc\#($0)"}"# }.joined(separator: ","))]}"#),
            ]
            for (method, path, body) in asks {
                try Self.resetPeak(pid)
                let before = try Self.memory(pid).resident
                let sent = try await drain(method, path, body: body)
                let grown = try Self.memory(pid).peak - before
                #expect(sent > everything, "\(path) sent \(sent) bytes")
                // A few bodies in flight at most: a whole answer would be 200 MB and more.
                #expect(grown < 100 << 20, "\(path): peak memory grew by \(grown >> 20) MB")
            }
            try Self.resetPeak(pid)
            let before = try Self.memory(pid).resident
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (method, path, body) in asks { group.addTask { try await drain(method, path, body: body) } }
                for try await sent in group { #expect(sent > everything) }
            }
            let grown = try Self.memory(pid).peak - before
            #expect(grown < 150 << 20, "four readers at once: peak memory grew by \(grown >> 20) MB")
        }
    }
}
