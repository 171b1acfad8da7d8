import Foundation
import Synchronization
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// Kills a writer process with SIGKILL in the middle of one large batch, then
/// checks the database is intact and holds none or all of the batch.
@Suite(.serialized) struct CrashTests {
    @Test func killDuringALargeBatchLeavesNoneOrAll() async throws {
        let dir = try TempDirectory()
        // About 30 MB in one transaction: far more than SQLite's page cache,
        // so pages spill to the WAL long before the commit.
        let total = 100_000
        let input = dir.url.appendingPathComponent("docs.jsonl")
        let lines = (0..<total).map { #"{"_id":"doc-\#($0)","n":\#($0),"text":"\#(String(repeating: "x", count: 200))"}"# }
        try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)

        // Something committed before the crash must survive it.
        let before = try await runCLI(["--dir", dir.url.path, "put", "crash", "survivor", #"{"ok":true}"#])
        #expect(before.status == 0)

        let process = Process()
        process.executableURL = try syncnodeExecutable()
        process.arguments = ["--dir", dir.url.path, "import", "crash", input.path, "--batch-size", "\(total)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Kill as soon as the transaction is writing pages (the WAL grows), early in the spill.
        // The watch runs on a thread of its own: on a loaded machine the test's task could wait
        // on the busy cooperative pool for longer than the whole write phase takes.
        let wal = dir.url.appendingPathComponent("crash.syncnode/db.sqlite3-wal").path
        let pid = process.processIdentifier
        let killedMidway = Mutex(false)
        let watcher = Thread {
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, Date() < deadline {
                var info = stat()
                if stat(wal, &info) == 0, info.st_size > 256 * 1024 {
                    killedMidway.withLock { $0 = process.isRunning }
                    break
                }
                usleep(200)
            }
            kill(pid, SIGKILL)
        }
        watcher.start()
        process.waitUntilExit()
        let killedMidwayValue = killedMidway.withLock { $0 }
        #expect(killedMidwayValue && process.terminationReason == .uncaughtSignal,
                "the import finished before it could be killed; make the batch larger")

        let db = try Database(name: "crash", config: DatabaseConfiguration(directory: dir.url))
        defer { try? db.close() }
        let integrity = try db.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
        let c = try db.defaultCollection()
        let count = try c.count
        #expect(count == 1 || count == total + 1, "found \(count) documents: a partial batch")
        #expect(try c.document(id: "survivor")?.boolean(forKey: "ok") == true)
        // The database is writable after the crash.
        try c.save(MutableDocument(id: "after"))
        #expect(try c.document(id: "after") != nil)
    }
}
