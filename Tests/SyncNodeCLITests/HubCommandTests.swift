import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `serve --hub` and `--hub-credentials`, as a user runs them.
@Suite struct HubCommandTests {
    @Test func badHubsAndCredentialsAreRefusedInOneLine() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-hub-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("no colon here\n".utf8).write(to: file)
        for (arguments, says) in [
            (["--hub", "http://127.0.0.1:5984/somedb"], "no database"),
            (["--hub", "ftp://127.0.0.1"], "not a CouchDB server URL"),
            (["--hub", "http://127.0.0.1:5984", "--hub-credentials", "/nonexistent"], "cannot read"),
            (["--hub", "http://127.0.0.1:5984", "--hub-credentials", file.path], "not USER:PASSWORD"),
        ] {
            let refused = try await runCLI(["--dir", directory.path, "serve", "--no-advertise", "--no-browse"] + arguments)
            #expect(refused.status != 0 && refused.stderr.contains(says) && refused.stderr.split(separator: "\n").count == 1, "\(arguments): \(refused)")
        }
    }

    /// A served node with the hub's credentials in a file puts its writes in the cluster.
    @Test(.enabled(if: CouchCluster.configured != nil, "SYNCNODE_COUCHDB_CLUSTER is not set: serve --hub not tested against a cluster"))
    func aServedNodeReachesTheClusterWithCredentialsFromAFile() async throws {
        let cluster = try #require(CouchCluster.configured)
        // Not the first member, which HubTests kills meanwhile.
        let member = try #require(URLComponents(url: cluster.members[cluster.members.count - 1], resolvingAgainstBaseURL: false))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-hub-\(UUID().uuidString)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-hub-credentials-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("\(member.user ?? ""):\(member.password ?? "")\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let db = "hubcli-\(UUID().uuidString.prefix(8).lowercased())"
        let bare = "http://\(member.host ?? ""):\(member.port ?? 0)"
        let node = try ServeProcess(arguments: ["--host", "127.0.0.1", "--no-advertise", "--no-browse", "--db", db, "--hub", bare,
                                                "--hub-credentials", file.path], directory: directory)
        defer { _ = node.stop() }
        #expect(try await runCLI(["--dir", directory.path, "put", db, "x", #"{"a":1}"#]).status == 0)
        let reached = try await eventually(within: 30) {
            try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "5", "\(cluster.members[1].absoluteString)/\(db)/x"]).stdout.contains(#""a":1"#)
        }
        #expect(reached, "serve: \(node.errors)")
        #expect(!node.errors.contains("can be read by other users"))
        _ = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "10", "-X", "DELETE", "\(cluster.members[1].absoluteString)/\(db)"])
    }
}
