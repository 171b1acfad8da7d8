import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `syncnode compare` on data directories and on a serving node, as a script runs it.
@Suite(.serialized) struct CompareCommandTests {
    private func lines(_ text: String) throws -> [DocumentValue] {
        try text.split(separator: "\n").map { try DocumentValue(json: String($0)) }
    }

    @Test func directoriesThatAgreeAndDiffer() async throws {
        let a = try TempDirectory(), b = try TempDirectory()
        for dir in [a, b] {
            for i in 0..<30 { #expect(try await runCLI(["--dir", dir.url.path, "put", "default", "d\(i)", "{\"i\":\(i)}"]).status == 0) }
        }
        // The same bodies give the same revisions: the two nodes agree without having synced.
        let equal = try await runCLI(["compare", a.url.path, b.url.path])
        #expect(equal.status == 0, "\(equal.stderr)")
        #expect(try DocumentValue(json: equal.stdout) == ["equal": true, "count": 30])

        #expect(try await runCLI(["--dir", a.url.path, "put", "default", "d3", "{\"i\":-3}"]).status == 0)
        #expect(try await runCLI(["--dir", a.url.path, "delete", "default", "d4"]).status == 0)
        #expect(try await runCLI(["--dir", b.url.path, "put", "default", "only-b", "{}"]).status == 0)
        let differ = try await runCLI(["compare", a.url.path, b.url.path])
        #expect(differ.status == 1)
        #expect(differ.stderr.contains("3 documents differ"))
        let found = try lines(differ.stdout)
        #expect(found.map { $0["id"]?.stringValue } == ["d3", "d4", "only-b"])
        #expect(found[1]["a"] == .null && found[1]["b"]?["deleted"] == false, "deleted on a: no entry there")
        #expect(found[2]["a"] == .null && found[2]["b"]?["rev"]?.stringValue?.hasPrefix("1-") == true)

        let missing = try await runCLI(["compare", a.url.path, b.url.path, "--keyspace", "nope"])
        #expect(missing.status == 1 && missing.stderr.contains("no database 'nope'"))
        #expect(try await runCLI(["compare", "ftp://x/db", b.url.path]).status == 2)
    }

    @Test func aDirectoryAgainstAServingNode() async throws {
        let node = try ServeProcess(user: "u", password: "p", arguments: ["--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        let mine = try TempDirectory()
        for i in 0..<20 {
            #expect(try await runCLI(["--dir", node.directory.path, "put", "default", "n\(i)", "{\"i\":\(i)}"]).status == 0)
            #expect(try await runCLI(["--dir", mine.url.path, "put", "default", "n\(i)", "{\"i\":\(i)}"]).status == 0)
        }
        let identity = try DocumentValue(json: try await runCLI(["--dir", node.directory.path, "identity"]).stdout)
        let fingerprint = try #require(identity["fingerprint"]?.stringValue)
        let url = "https://u:p@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"
        let equal = try await runCLI(["compare", mine.url.path, url])
        #expect(equal.status == 0, "\(equal.stderr)")
        #expect(try DocumentValue(json: equal.stdout)["equal"] == true)

        #expect(try await runCLI(["--dir", node.directory.path, "put", "default", "n7", "{\"i\":70}"]).status == 0)
        let differ = try await runCLI(["compare", url, mine.url.path])
        #expect(differ.status == 1)
        #expect(try lines(differ.stdout).map { $0["id"]?.stringValue } == ["n7"])

        let refused = try await runCLI(["compare", mine.url.path, "https://u:wrong@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"])
        #expect(refused.status == 1 && refused.stderr.contains("401"))
        let unreachable = try await runCLI(["compare", mine.url.path, "https://127.0.0.1:1/default"])
        #expect(unreachable.status == 3 && unreachable.stderr.split(separator: "\n").count == 1)
    }
}
