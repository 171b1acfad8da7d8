import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `syncnode wait --in-sync` on a running node paired with another, as a multi-node script uses it.
@Suite(.serialized) struct WaitCommandTests {
    @Test func waitReturnsOnceTwoPairedNodesHoldTheSameDocuments() async throws {
        let options = ["--host", "127.0.0.1", "--no-advertise", "--no-browse"]
        let a = try ServeProcess(arguments: options)
        defer { _ = a.stop() }
        let b = try ServeProcess(arguments: options)
        defer { _ = b.stop() }
        let invitation = try #require(a.url.string)
        let paired = try await runCLI(["--dir", b.directory.path, "pair", invitation])
        #expect(paired.status == 0, "\(paired.stderr)")
        for i in 0..<15 {
            #expect(try await runCLI(["--dir", a.directory.path, "put", "default", "from-a-\(i)", "{\"i\":\(i)}"]).status == 0)
            #expect(try await runCLI(["--dir", b.directory.path, "put", "default", "from-b-\(i)", "{\"i\":\(i)}"]).status == 0)
        }
        let waited = try await runCLI(["--dir", b.directory.path, "wait", "--in-sync", "--peers", "1", "--timeout", "60s"])
        #expect(waited.status == 0, "\(waited.stdout) \(waited.stderr)")
        let answer = try DocumentValue(json: waited.stdout)
        #expect(answer["in_sync"] == true && answer["peers"] == 1)
        // What wait promised, checked independently.
        let fingerprint = try #require(a.url.queryItems?.first { $0.name == "fp" }?.value)
        let credential = try DocumentValue(json: try await runCLI(["--dir", a.directory.path, "credential"]).stdout)
        let user = try #require(credential["user"]?.stringValue), password = try #require(credential["password"]?.stringValue)
        let compared = try await runCLI(["compare", b.directory.path, "https://\(user):\(password)@127.0.0.1:\(a.port)/default?fp=\(fingerprint)"])
        #expect(compared.status == 0, "\(compared.stdout) \(compared.stderr)")
        #expect(try DocumentValue(json: compared.stdout)["count"] == 30)

        // A peer that stops answering: wait gives up at its timeout and says why, per peer.
        _ = a.stop()
        #expect(try await runCLI(["--dir", b.directory.path, "put", "default", "after", "{}"]).status == 0)
        let behind = try await runCLI(["--dir", b.directory.path, "wait", "--in-sync", "--timeout", "3s"])
        #expect(behind.status == 1)
        let why = try DocumentValue(json: String(behind.stdout.split(separator: "\n").first ?? ""))
        #expect(why["in_sync"] == false && why["why"]?.stringValue?.contains("default:") == true, "\(behind.stdout)")
        #expect(behind.stderr.contains("not in sync after 3s"))
    }

    @Test func waitNeedsARunningNode() async throws {
        let dir = try TempDirectory()
        let refused = try await runCLI(["--dir", dir.url.path, "wait", "--in-sync"])
        #expect(refused.status == 1 && refused.stderr.contains("no node runs on"))
        #expect(try await runCLI(["--dir", dir.url.path, "wait"]).status == 2)
    }
}

/// `serve --subscribe`, as a user scripts it: the subscriber holds only what it subscribes to,
/// `wait --in-sync` returns on it, and bad entries are refused before the node starts.
@Suite(.serialized) struct SubscribeCommandTests {
    @Test func aSubscribedServePullsOnlyItsMatchesAndWaitSaysInSync() async throws {
        let options = ["--host", "127.0.0.1", "--no-advertise", "--no-browse"]
        let a = try ServeProcess(arguments: options)
        defer { _ = a.stop() }
        for i in 0..<12 {
            let body = i % 4 == 0 ? #"{"type":"order","i":\#(i)}"# : #"{"type":"note","i":\#(i)}"#
            #expect(try await runCLI(["--dir", a.directory.path, "put", "default", "d\(i)", body]).status == 0)
        }
        let invitation = try #require(a.url.string)
        let b = try ServeProcess(arguments: options + ["--subscribe", #"default={"type":"order"}"#, "--pair", invitation])
        defer { _ = b.stop() }
        let waited = try await runCLI(["--dir", b.directory.path, "wait", "--in-sync", "--peers", "1", "--timeout", "60s"])
        #expect(waited.status == 0, "\(waited.stdout) \(waited.stderr)")
        let held = try await runCLI(["--dir", b.directory.path, "export", "default"]).stdout
        let ids = held.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }.compactMap { $0["_id"]?.stringValue }
        #expect(ids.sorted() == ["d0", "d4", "d8"])

        let dir = try TempDirectory()
        for (bad, named) in [("default=order", "--subscribe"), (#"x.y={"a":1}"#, "--subscribe"), (#"default={"a":{"$near":1}}"#, "$near")] {
            let refused = try await runCLI(["--dir", dir.url.path, "serve", "--host", "127.0.0.1", "--no-advertise", "--no-browse", "--subscribe", bad])
            #expect(refused.status != 0 && refused.stderr.contains(named), "\(bad): \(refused.stderr)")
        }
    }
}
