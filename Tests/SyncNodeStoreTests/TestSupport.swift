import Foundation
@testable import SyncNodeStore

/// A fresh directory under the system temp dir, removed when the test ends.
final class TempDirectory: @unchecked Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func open(_ name: String = "db", revsLimit: Int = 20) throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: url, revsLimit: revsLimit))
    }
}

/// Collects values from listener callbacks.
final class Collector<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []

    func append(_ item: T) { lock.withLock { items.append(item) } }
    var values: [T] { lock.withLock { items } }

    /// Waits until `count` values arrived (or `timeout` passed) and returns them.
    func wait(count: Int, timeout: TimeInterval = 5) async -> [T] {
        let deadline = Date().addingTimeInterval(timeout)
        while values.count < count, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return values
    }
}

/// The package root, found from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The built `syncnode` executable (scripts/test.sh builds it before the tests).
func syncnodeExecutable() throws -> URL {
    for config in ["debug", "release"] {
        let url = packageRoot.appendingPathComponent(".build/\(config)/syncnode")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw StoreError.notFound(.file, "the syncnode executable under .build/: run `swift build` first (scripts/test.sh does)")
}

struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs the CLI with `arguments`, feeding `stdin`.
func runCLI(_ arguments: [String], stdin: String? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = try syncnodeExecutable()
    process.arguments = arguments
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// A database in a temporary directory with one collection; suites subclass
/// it (one fresh instance per test) and it closes the database.
class CollectionFixture {
    let dir: TempDirectory
    let db: Database
    let collection: DocumentCollection

    init(collection name: String, scope: String? = nil) throws {
        dir = try TempDirectory()
        db = try dir.open()
        collection = try db.createCollection(name: name, scope: scope)
    }

    deinit { try? db.close() }
}

/// The fixture with a `tasks` collection.
class TasksFixture: CollectionFixture {
    var tasks: DocumentCollection { collection }

    init() throws { try super.init(collection: "tasks") }
}
