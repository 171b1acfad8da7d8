import Foundation
import Synchronization
import Testing
@testable import SyncNodeSync

/// The access files are followed through inotify: a file replaced whole (as `syncnode trust
/// remove` writes it, a temporary file renamed into place) or edited where it lies is seen
/// without waiting for the periodic look.
struct AccessWatchTests {
    @Test func aFileReplacedOrEditedIsSeenWithoutThePeriodicLook() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("access-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("trusted-peers")
        try PrivateFile.write("# none\n", to: file)
        // A periodic look an hour away: only inotify can tell the watch in time.
        let watch = AccessWatch(files: [file], backstop: .seconds(3600))
        let changes = Mutex(0)
        let token = watch.onChange { changes.withLock { $0 += 1 } }
        defer { watch.remove(token) }
        let running = Task { await watch.run() }
        defer { running.cancel() }

        /// Changes the file with `write` until the watch says so (the first change may come
        /// before it subscribed), at most 30 times a second apart; true once it did.
        func seen(after write: (Int) throws -> Void) async throws -> Bool {
            let before = changes.withLock { $0 }
            for attempt in 0..<30 {
                try write(attempt)
                for _ in 0..<100 {
                    if changes.withLock({ $0 }) > before { return true }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            return false
        }
        #expect(try await seen { try PrivateFile.write("AB:CD \($0)\n", to: file) }, "replaced whole")
        // Not the fallback for a machine without inotify, which looks every 200 ms.
        let followsWrites = watch.followsWrites.load(ordering: .relaxed)
        #expect(followsWrites)
        #expect(try await seen { attempt in
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("# edited \(attempt)\n".utf8))
        }, "edited where it lies")
    }
}
