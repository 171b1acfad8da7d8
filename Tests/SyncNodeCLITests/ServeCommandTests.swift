import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// `syncnode serve` processes and the commands that talk to them, as a user runs both.
@Suite(.serialized) struct ServeCommandTests {
    @Test func syncPullsAndPushesThroughAServeProcess() async throws {
        let node = try ServeProcess(user: "u", password: "p w")
        defer { _ = node.stop() }
        let peer = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: peer) }
        for i in 0..<3 { #expect(try await runCLI(["--dir", node.directory.path, "put", "default", "a\(i)", "{\"i\":\(i)}"]).status == 0) }
        let identity = try await runCLI(["--dir", node.directory.path, "identity"]).stdout
        let fingerprint = try #require(try DocumentValue(json: identity)["fingerprint"]?.stringValue)
        let url = "https://u:p%20w@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"

        let pulled = try await runCLI(["--dir", peer.path, "sync", url, "--pull"])
        #expect(pulled.status == 0, "\(pulled.stderr)")
        let pulledCounts = try DocumentValue(json: pulled.stdout)
        #expect(pulledCounts["pulled"] == 3 && pulledCounts["pushed"] == 0)
        #expect(try await runCLI(["--dir", peer.path, "get", "default", "a2"]).stdout.contains(#""i":2"#))

        #expect(try await runCLI(["--dir", peer.path, "put", "default", "b", "{}"]).status == 0)
        let both = try DocumentValue(json: try await runCLI(["--dir", peer.path, "sync", url]).stdout)
        #expect(both["pushed"] == 1 && both["pulled"] == 0)
        #expect(try await runCLI(["--dir", node.directory.path, "get", "default", "b"]).status == 0)

        let refused = try await runCLI(["--dir", peer.path, "sync", "https://u:wrong@127.0.0.1:\(node.port)/default?fp=\(fingerprint)"])
        #expect(refused.status == 1 && refused.stderr.contains("401"))
        let unreachable = try await runCLI(["--dir", peer.path, "sync", "https://127.0.0.1:1/default", "--attempts", "2"])
        #expect(unreachable.status == 3 && unreachable.stderr.split(separator: "\n").count == 1)
    }


    /// `serve`'s exit code says what kind of failure stopped it: a port another node holds is
    /// the network's (3); a data directory whose UUID file is damaged is the user's to mend (1),
    /// with one line naming the file.
    @Test func serveExitsWithTheCodeOfTheErrorsKind() async throws {
        let node = try ServeProcess(user: "u", password: "p", arguments: ["--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-exit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: other) }
        let taken = try await runCLI(["--dir", other.path, "serve", "--host", "127.0.0.1", "--port", "\(node.port)", "--no-advertise", "--no-browse"])
        #expect(taken.status == 3, "\(taken.stderr)")

        try Data("not a uuid".utf8).write(to: other.appendingPathComponent(".node/uuid"))
        let damaged = try await runCLI(["--dir", other.path, "serve", "--no-advertise", "--no-browse"])
        #expect(damaged.status == 1, "\(damaged.stderr)")
        #expect(damaged.stderr.contains(".node/uuid") && damaged.stderr.split(separator: "\n").count == 1, "\(damaged.stderr)")
    }

    /// A browser page of an allowed origin may call the API with credentials (PouchDB with CORS);
    /// other origins get no CORS headers. curl sends the browser's preflight.
    @Test func serveAllowsTheCORSOriginsItIsGiven() async throws {
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
        let bad = try await runCLI(["serve", "--cors-origin", "ftp://x/y"])
        #expect(bad.status != 0 && bad.stderr.contains("--cors-origin"))
    }

    /// `--read-only` refuses writes through the API; reads work.
    @Test func serveReadOnlyRefusesWrites() async throws {
        let node = try ServeProcess(user: "u", password: "p", arguments: ["--read-only", "--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        func curl(_ arguments: [String]) throws -> String {
            try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), [
                "--silent", "--cacert", node.certificate.path, "--user", "u:p", "--write-out", " %{http_code}",
            ] + arguments).stdout
        }
        let refused = try curl(["--request", "PUT", "--data", #"{"a":1}"#, "https://localhost:\(node.port)/default/doc"])
        #expect(refused.hasSuffix(" 403") && refused.contains("read-only"), "\(refused)")
        #expect(try curl(["https://localhost:\(node.port)/default"]).hasSuffix(" 200"))
        #expect(try curl(["--request", "PUT", "https://localhost:\(node.port)/other"]).hasSuffix(" 403"))
    }

    /// `--tls-cert`/`--tls-key` serve an imported identity: clients verify it, and the pairing
    /// URL pins its fingerprint; a key of another certificate is refused in one line.
    @Test func serveUsesAnImportedIdentity() async throws {
        let dir = try TempDirectory()
        let cert = dir.url.appendingPathComponent("cert.pem").path, key = dir.url.appendingPathComponent("key.pem").path
        let otherCert = dir.url.appendingPathComponent("other.pem").path, otherKey = dir.url.appendingPathComponent("other.key").path
        for (c, k) in [(cert, key), (otherCert, otherKey)] {
            let made = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/openssl"), [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", k, "-out", c,
                "-subj", "/CN=imported", "-days", "2", "-addext", "subjectAltName=DNS:localhost",
            ])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let digest = try ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c",
            "openssl x509 -in '\(cert)' -outform der | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=\\n'"])
        let node = try ServeProcess(user: "u", password: "p", arguments: ["--tls-cert", cert, "--tls-key", key, "--no-advertise", "--no-browse"])
        defer { _ = node.stop() }
        #expect(node.url.queryItems?.first { $0.name == "fp" }?.value == digest.stdout)
        let up = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["--silent", "--show-error", "--user", "u:p", "--cacert", cert, "https://localhost:\(node.port)/_up"])
        #expect(up.status == 0 && up.stdout.contains("ok"), "the imported certificate verifies: \(up.stderr)")

        // Bounded: a serve that wrongly started would run until stopped.
        let mismatched = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/timeout"), [
            "60", try syncnodeExecutable().path, "--dir", dir.url.path, "serve", "--tls-cert", cert, "--tls-key", otherKey, "--no-advertise", "--no-browse",
        ])
        #expect(mismatched.status == 1 && mismatched.stderr.contains("does not belong to the certificate"), "\(mismatched.stderr)")
        #expect(try await runCLI(["serve", "--tls-cert", cert]).status == 2)
        #expect(try await runCLI(["serve", "--tls-cert", cert, "--tls-key", key, "--no-tls"]).status == 2)
        #expect(try await runCLI(["serve", "--pair", "https://x:1/db"]).status == 2, "a pairing URL without fp")
    }
}
