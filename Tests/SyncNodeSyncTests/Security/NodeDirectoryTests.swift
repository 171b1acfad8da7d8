import Foundation
import Testing
@testable import SyncNodeSync

/// The node's identity in its data directory: made once, then kept; a damaged one is an error
/// that names the file, never a new identity (peers key their checkpoints and trust on it).
@Suite struct NodeDirectoryTests {
    @Test func aDamagedUUIDFileIsAnErrorNotANewIdentity() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-uuid-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let first = try NodeDirectory(url: url).uuid
        #expect(try NodeDirectory(url: url).uuid == first)
        let file = url.appendingPathComponent(".node/uuid")
        for damaged in ["", "not-a-uuid\n", String(first.dropLast(4))] {
            try Data(damaged.utf8).write(to: file)
            #expect {
                _ = try NodeDirectory(url: url)
            } throws: { error in
                "\(error)".contains(file.path) && "\(error)".contains("Restore it")
            }
            // Nothing was written over it.
            #expect(try String(contentsOf: file, encoding: .utf8) == damaged)
        }
        // Put back, the node is itself again.
        try Data((first + "\n").utf8).write(to: file)
        #expect(try NodeDirectory(url: url).uuid == first)
    }
}
