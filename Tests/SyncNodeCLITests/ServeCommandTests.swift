import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `syncnode serve` processes and the commands that talk to them, as a user runs both.
@Suite(.serialized) struct ServeCommandTests {
    @Test func syncPullsAndPushesThroughAServeProcess() throws {
        let node = try ServeProcess(user: "u", password: "p w")
        defer { _ = node.stop() }
        let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peer) }
        for i in 0..<3 { #expect(try runCLI(["--dir", node.directory.path, "put", "default", "a\(i)", "{\"i\":\(i)}"]).status == 0) }
        let identity = try runCLI(["--dir", node.directory.path, "identity"]).stdout
        let fingerprint = try #require(try DocumentValue(json: identity)["fingerprint"]?.stringValue)
        let url = "https://u:p%20w@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"

        let pulled = try runCLI(["--dir", peer.path, "sync", url, "--pull"])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        let pulledCounts = try DocumentValue(json: pulled.stdout)
        #expect(pulledCounts["pulled"] == 3 && pulledCounts["pushed"] == 0)
        #expect(try runCLI(["--dir", peer.path, "get", "default", "a2"]).stdout.contains(#""i":2"#))

        #expect(try runCLI(["--dir", peer.path, "put", "default", "b", "{}"]).status == 0)
        let both = try DocumentValue(json: try runCLI(["--dir", peer.path, "sync", url]).stdout)
        #expect(both["pushed"] == 1 && both["pulled"] == 0)
        #expect(try runCLI(["--dir", node.directory.path, "get", "default", "b"]).status == 0)

        let refused = try runCLI(["--dir", peer.path, "sync", "https://u:wrong@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"])
        #expect(refused.status == 1 && refused.stderr.contains("401"))
        let unreachable = try runCLI(["--dir", peer.path, "sync", "https://127.0.0.1:1/default", "--attempts", "2"])
        #expect(unreachable.status == 3 && unreachable.stderr.split(separator: "\n").count == 1)
    }


    /// A browser page of an allowed origin may call the API with credentials (PouchDB with CORS);
    /// other origins get no CORS headers. curl sends the browser's preflight.
    @Test func serveAllowsTheCORSOriginsItIsGiven() throws {
        let node = try ServeProcess(user: "u", password: "p", arguments: ["--cors-origin", "http://app.example:8080", "--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        func preflight(_ origin: String) throws -> [String: String] {
            let curl = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), [
                "--silent", "--show-error", "--cacert", node.certificate.path, "--output", "/dev/null", "--dump-header", "-",
                "--request", "OPTIONS", "--header", "Origin: \(origin)", "--header", "Access-Control-Request-Method: GET",
                "--header", "Access-Control-Request-Headers: authorization,content-type",
                "https://localhost:\(node.port)/default/_changes",
            ])
            #expect(curl.status == 0, "\(curl.stderr)")
            var headers: [String: String] = [:]
            for line in curl.stdout.split(whereSeparator: \.isNewline) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return headers
        }
        let allowed = try preflight("http://app.example:8080")
        #expect(allowed["access-control-allow-origin"] == "http://app.example:8080")
        #expect(allowed["access-control-allow-credentials"] == "true")
        #expect(allowed["access-control-allow-headers"]?.contains("authorization") == true)
        #expect(try preflight("http://evil.example")["access-control-allow-origin"] == nil)
        let bad = try runCLI(["serve", "--cors-origin", "ftp://x/y"])
        #expect(bad.status != 0 && bad.stderr.contains("--cors-origin"))
    }
}
