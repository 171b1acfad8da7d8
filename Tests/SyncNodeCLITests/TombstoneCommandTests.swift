import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `serve --tombstone-ttl` and what `info` says of it, as a user runs them.
@Suite struct TombstoneCommandTests {
    /// The first collection's `tombstone_reaping` and `deleted`, as `info` prints them.
    private static func info(_ directory: URL) throws -> (reaping: DocumentValue?, deleted: DocumentValue?) {
        // Polled by `eventually`, which is not async: a short child, waited for here.
        let lines = try ChildProcess.run(try syncnodeExecutable(), ["--dir", directory.path, "info"]).stdout.split(separator: "\n").map { try DocumentValue(json: String($0)) }
        guard case .array(let collections)? = lines.last?["collections"], let first = collections.first else { return (nil, nil) }
        return (first["tombstone_reaping"], first["deleted"])
    }

    /// A trusted peer that never pulls holds a tombstone past its time to live, `info` names
    /// it, and untrusting it lets the running node reap.
    @Test func aPeerThatNeverPullsHoldsReapingUntilUntrusted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-ttl-\(UUID().uuidString)")
        let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-ttl-peer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peer) }
        let d = ["--dir", directory.path]
        for id in ["a", "b"] { #expect(try await runCLI(d + ["put", "default", id, "{}"]).status == 0) }
        #expect(try await runCLI(d + ["delete", "default", "a"]).status == 0)
        let identity = try DocumentValue(json: try await runCLI(["--dir", peer.path, "identity"]).stdout)
        let fingerprint = try #require(identity["fingerprint"]?.stringValue)
        #expect(try await runCLI(d + ["trust", "add", fingerprint]).status == 0)

        let node = try ServeProcess(arguments: ["--host", "127.0.0.1", "--tombstone-ttl", "1s", "--no-advertise", "--no-browse"], directory: directory)
        defer { _ = node.stop() }
        let held = try await eventually(within: 30) { try Self.info(directory).reaping?["waiting"] == .int(1) }
        #expect(held, "info: \(String(describing: try? Self.info(directory))); serve: \(node.errors)")
        let reaping = try Self.info(directory).reaping
        #expect(reaping?["ttl_seconds"] == .int(1) && reaping?["expired"] == .int(1))
        #expect(reaping?["held_by"] == .array([.string("peer:\(fingerprint.prefix(12)) has never checkpointed default here")]), "\(String(describing: reaping))")

        #expect(try await runCLI(d + ["trust", "remove", fingerprint]).status == 0)
        let reaped = try await eventually(within: 30) { try Self.info(directory).deleted == .int(0) }
        #expect(reaped, "info: \(String(describing: try? Self.info(directory))); serve: \(node.errors)")
        #expect(try await runCLI(d + ["get", "default", "b"]).status == 0)
    }

    @Test func aBadTimeToLiveIsRefusedInOneLine() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-ttl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let refused = try await runCLI(["--dir", directory.path, "serve", "--tombstone-ttl", "soon", "--no-advertise", "--no-browse"])
        #expect(refused.status != 0 && refused.stderr.contains("tombstone-ttl"), "\(refused)")
    }
}
