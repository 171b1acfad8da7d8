import AsyncHTTPClient
import Foundation
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `syncnode serve` is closed by default: a node given no credential makes its own, serving
/// anonymously takes a flag and stays on loopback, and users added with `syncnode user` sign in
/// against salted hashes.
@Suite(.serialized) struct ServeSecurityTests {
    static let quiet = ["--no-advertise", "--no-browse", "--qr", "none"]

    /// The status of `GET path` on the node, with Basic credentials when given.
    static func status(_ node: ServeProcess, _ path: String, method: HTTPMethod = .GET, user: String? = nil, password: String? = nil) async throws -> UInt {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(node.certificate.path)
        tls.certificateVerification = .noHostnameVerification
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(node.port)\(path)")
        request.method = method
        if let user, let password {
            request.headers.add(name: "Authorization", value: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
        }
        do {
            let status = try await client.execute(request, timeout: .seconds(20)).status.code
            try await client.shutdown()
            return status
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func permissions(_ file: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int)
    }

    /// The node's own admin credential: made once, kept 0600, printed by `syncnode credential`, and
    /// never in what serve prints (its pairing URL is an invitation).
    static func credential(_ directory: URL) throws -> (user: String, password: String) {
        let printed = try ChildProcess.run(try syncnodeExecutable(), ["--dir", directory.path, "credential"])
        let json = try DocumentValue(json: printed.1)
        return (try #require(json["user"]?.string), try #require(json["password"]?.string))
    }

    @Test func aNodeGivenNoCredentialMakesItsOwnAndKeepsIt() async throws {
        let first = try ServeProcess(arguments: ["--host", "127.0.0.1"] + Self.quiet)
        let directory = first.directory
        defer { try? FileManager.default.removeItem(at: directory) }
        let (user, password) = try Self.credential(directory)
        #expect(user == "admin" && password.count >= 24)
        // Nothing serve printed carries the password: its URL is an invitation.
        #expect(first.url.user == nil && first.url.password == nil)
        #expect(first.url.queryItems?.contains { $0.name == "invite" } == true)
        #expect(!first.url.string!.contains(password) && !first.errors.contains(password))
        #expect(try await Self.status(first, "/default") == 401)
        #expect(try await Self.status(first, "/_all_dbs") == 401)
        #expect(try await Self.status(first, "/default", user: user, password: password + "x") == 401)
        #expect(try await Self.status(first, "/default", user: user, password: password) == 200)
        #expect(try Self.permissions(directory.appendingPathComponent(".node/credential.json")) == 0o600)
        #expect(first.stop(keepingDirectory: true) == 0)

        let again = try ServeProcess(arguments: ["--host", "127.0.0.1"] + Self.quiet, directory: directory)
        #expect(try Self.credential(directory).password == password)
        #expect(try await Self.status(again, "/default", user: user, password: password) == 200)
        #expect(again.stop(keepingDirectory: true) == 0)
    }

    @Test func anonymousServingTakesAFlagAndStaysOnLoopback() async throws {
        let node = try ServeProcess(arguments: ["--anonymous"] + Self.quiet)
        defer { _ = node.stop() }
        #expect(node.url.host == "127.0.0.1")
        #expect(node.url.user == nil && node.url.password == nil)
        #expect(try await Self.status(node, "/default") == 200)
        #expect(!FileManager.default.fileExists(atPath: node.directory.appendingPathComponent(".node/credential.json").path))
    }

    @Test func usersSignInAgainstSaltedHashes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-users-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let syncnode = try syncnodeExecutable()
        let added = try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "add", "ann"], environment: ["SYNCNODE_PASSWORD": "correct horse"])
        #expect(added.0 == 0, "\(added.2)")
        let file = directory.appendingPathComponent(".node/users.json")
        let stored = try String(contentsOf: file, encoding: .utf8)
        #expect(!stored.contains("correct horse") && stored.contains("pbkdf2"))
        #expect(try Self.permissions(file) == 0o600)

        let node = try ServeProcess(arguments: ["--host", "127.0.0.1"] + Self.quiet, directory: directory)
        defer { _ = node.stop() }
        // Users exist, so the node makes no credential of its own and shows none.
        #expect(node.url.user == nil)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(".node/credential.json").path))
        #expect(try await Self.status(node, "/default", user: "ann", password: "correct horse") == 200)
        #expect(try await Self.status(node, "/default", user: "ann", password: "correct horsE") == 401)
        #expect(try await Self.status(node, "/default") == 401)

        // Changes apply to the running node.
        let generated = try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "add", "bob", "--generate"])
        let bobPassword = try #require(try DocumentValue(json: generated.1)["password"]?.string)
        #expect(try await Self.status(node, "/default", user: "bob", password: bobPassword) == 200)
        // A new password ends the old one at once, though the node had checked it before.
        #expect(try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "add", "ann"], environment: ["SYNCNODE_PASSWORD": "battery staple"]).0 == 0)
        #expect(try await Self.status(node, "/default", user: "ann", password: "correct horse") == 401)
        #expect(try await Self.status(node, "/default", user: "ann", password: "battery staple") == 200)
        #expect(try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "remove", "ann"]).0 == 0)
        #expect(try await Self.status(node, "/default", user: "ann", password: "battery staple") == 401)
        let listed = try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "list"]).1
        #expect(listed.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"roles":[],"user":"bob"}"#)
        // Users are not server admins unless made so.
        let admin = try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "add", "carl", "--admin", "--role", "ops"],
                                         environment: ["SYNCNODE_PASSWORD": "carl-pw"])
        #expect(admin.0 == 0, "\(admin.2)")
        #expect(try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "list"]).1.contains(#"{"roles":["_admin","ops"],"user":"carl"}"#))
        #expect(try await Self.status(node, "/newdb", method: .PUT, user: "bob", password: bobPassword) == 403)
        #expect(try await Self.status(node, "/newdb", method: .PUT, user: "carl", password: "carl-pw") == 201)
        let missing = try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "remove", "ann"])
        #expect(missing.0 == 1 && missing.2.contains("no user 'ann'"))
        #expect(!node.errors.contains("correct horse") && !node.errors.contains(bobPassword))
    }

    @Test(arguments: [
        (["--anonymous", "--user", "u"], "--anonymous serves without authentication"),
        (["--user", "u"], "SYNCNODE_PASSWORD"),
        (["--password", "p"], "--password needs --user"),
        (["--anonymous", "--trust-on-first-use"], "--anonymous admits everyone"),
    ])
    func contradictoryOptionsAreRefused(_ arguments: [String], _ message: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-refused-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (status, _, stderr) = try ChildProcess.run(
            try syncnodeExecutable(), ["--dir", directory.path, "serve"] + Self.quiet + arguments,
            environment: ["SYNCNODE_PASSWORD": ""])
        #expect(status == 2 && stderr.contains(message), "\(stderr)")
    }

    @Test func plainTextPasswordsAreWarnedAbout() async throws {
        let users = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-users-\(UUID().uuidString).json")
        try Data(#"{"ann": "s3cret-pw"}"#.utf8).write(to: users)
        defer { try? FileManager.default.removeItem(at: users) }
        let node = try ServeProcess(arguments: ["--host", "127.0.0.1", "--users", users.path, "--user", "bob", "--password", "other-pw"] + Self.quiet)
        defer { _ = node.stop() }
        #expect(try await Self.status(node, "/default", user: "ann", password: "s3cret-pw") == 200)
        #expect(try await Self.status(node, "/default", user: "bob", password: "other-pw") == 200)
        #expect(node.errors.contains("syncnode user add"))
        #expect(node.errors.contains("SYNCNODE_PASSWORD"))
        #expect(!node.errors.contains("s3cret-pw") && !node.errors.contains("other-pw"))
    }

    @Test func rotatingTheIdentityRetiresTheOldOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-rotate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let syncnode = try syncnodeExecutable()
        let first = try DocumentValue(json: try ChildProcess.run(syncnode, ["--dir", directory.path, "identity"]).1)
        #expect(first["key"] == "ECDSA P-256" && first["expires"]?.string?.hasPrefix("20") == true)
        let rotated = try ChildProcess.run(syncnode, ["--dir", directory.path, "identity", "--rotate"])
        #expect(rotated.0 == 0)
        let second = try DocumentValue(json: rotated.1)
        let old = try #require(first["fingerprint"]?.string), new = try #require(second["fingerprint"]?.string)
        #expect(old != new && second["retired"]?.string == old && second["uuid"] == first["uuid"])
        #expect(rotated.2.contains("trust remove") && rotated.2.contains(new))
        // The new identity is the one the node uses from now on; the old key is kept, still private.
        #expect(try ChildProcess.run(syncnode, ["--dir", directory.path, "identity"]).1.contains(new))
        let retired = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(".node").path).filter { $0.hasPrefix("tls-retired-") }
        #expect(retired.count == 1)
        let key = directory.appendingPathComponent(".node/\(retired[0])/key.pem")
        #expect(try Self.permissions(key) == 0o600)
    }

    /// No password, hash or key reaches the log, at its most verbose, whatever happens.
    @Test func noSecretIsLogged() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let syncnode = try syncnodeExecutable()
        #expect(try ChildProcess.run(syncnode, ["--dir", directory.path, "user", "add", "hashed", "--role", "r"],
                                     environment: ["SYNCNODE_PASSWORD": "hashed-Secret-1"]).0 == 0)
        let node = try ServeProcess(arguments: ["--host", "127.0.0.1", "--user", "plain"] + Self.quiet, directory: directory,
                                              environment: ["SYNCNODE_PASSWORD": "plain-Secret-2", "SYNCNODE_LOG": "trace"])
        defer { _ = node.stop() }
        for (user, password) in [("plain", "plain-Secret-2"), ("plain", "wrong-Secret-3"), ("hashed", "hashed-Secret-1"), ("hashed", "wrong-Secret-4")] {
            _ = try await Self.status(node, "/default", user: user, password: password)
            _ = try await Self.status(node, "/default/doc", method: .PUT, user: user, password: password)
        }
        let (peer, peerDir) = try PeerCertificateTests.identity()
        defer { try? FileManager.default.removeItem(at: peerDir) }
        var tls = try TLSIdentity.persistent(in: directory.appendingPathComponent(".node/tls"), commonName: "syncnode").pinningClientConfiguration()
        try peer.presentAsClient(in: &tls)
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(tlsConfiguration: tls))
        _ = try? await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(node.port)/default"), timeout: .seconds(10))
        try await client.shutdown()
        let log = node.errors
        #expect(log.contains("trace") || log.contains("debug"), "the log was not verbose: \(log.prefix(300))")
        let users = try String(contentsOf: directory.appendingPathComponent(".node/users.json"), encoding: .utf8)
        let hash = try #require(try DocumentValue(json: users)["users"]?["hashed"]?["derived_key"]?.string)
        let keys = try [directory.appendingPathComponent(".node/tls/key.pem"), peerDir.appendingPathComponent(".node/tls/key.pem")].map {
            try String(contentsOf: $0, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
        }.flatMap { $0 }
        let session = try Data(contentsOf: directory.appendingPathComponent(".node/session-secret")).base64EncodedString()
        for secret in ["plain-Secret-2", "wrong-Secret-3", "hashed-Secret-1", "wrong-Secret-4", hash, session] + keys.map(String.init) {
            #expect(!log.contains(secret), "the log holds a secret")
        }
    }
}
