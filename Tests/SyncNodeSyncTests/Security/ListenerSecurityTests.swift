import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import X509
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ListenerSecurityTests {
    @Test func everyEndpointWantsCredentials() async throws {
        let h = try await ListenerHarness(authFailuresPerMinute: 1000)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let wrong = "Basic " + Data("\(ListenerHarness.user):wrong".utf8).base64EncodedString()
            let endpoints: [(HTTPMethod, String)] = [
                (.GET, "/"), (.GET, "/_all_dbs"), (.GET, "/db"), (.PUT, "/db2"), (.DELETE, "/db"), (.GET, "/db/x"),
                (.PUT, "/db/x"), (.GET, "/db/_changes"), (.POST, "/db/_bulk_docs"), (.POST, "/db/_revs_diff"),
                (.GET, "/db/_local/x"), (.GET, "/db/x/att"), (.POST, "/db/_all_docs"),
            ]
            for (method, path) in endpoints {
                for auth in [nil, wrong, "Bearer x", "Basic !!!"] as [String?] {
                    let reply = try await h.request(method, path, body: method == .GET ? nil : "{}", auth: auth)
                    #expect(reply.status == 401, "\(method) \(path) with \(auth ?? "no credentials")")
                    #expect(reply.headers["www-authenticate"] == #"Basic realm="syncnode""#)
                }
            }
            // Nothing was changed by the refused requests.
            #expect(try await h.request(.GET, "/db").status == 200)
            #expect(try await h.request(.GET, "/_all_dbs").json == ["db"])
        }
    }

    /// CouchDB's cookie login, as its replicator and browser clients use it.
    @Test func sessionCookiesLogInAuthenticateAndLogOut() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let form = "name=\(ListenerHarness.user)&password=" + ListenerHarness.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let login = try await h.request(.POST, "/_session", bytes: Array(form.utf8),
                                            headers: [("Content-Type", "application/x-www-form-urlencoded")], auth: nil)
            #expect(login.status == 200)
            #expect(login["name"]?.string == ListenerHarness.user)
            let setCookie = try #require(login.headers["set-cookie"])
            #expect(setCookie.hasPrefix("AuthSession="))
            for attribute in ["Path=/", "HttpOnly", "Max-Age=600", "Secure", "SameSite=Lax"] { #expect(setCookie.contains(attribute), "\(attribute)") }
            let cookie = String(setCookie.prefix { $0 != ";" })

            // The cookie alone authenticates any endpoint, and /_session says so.
            #expect(try await h.request(.PUT, "/db", headers: [("Cookie", cookie)], auth: nil).status == 201)
            let me = try await h.request(.GET, "/_session", headers: [("Cookie", cookie)], auth: nil)
            #expect(me["userCtx"]?["name"] == .string(ListenerHarness.user))
            #expect(me["info"]?["authenticated"] == "cookie")

            // JSON logins work too; a wrong password is refused without a cookie.
            let json = try await h.request(.POST, "/_session", body: #"{"name":"ann","password":"s3cret:pa$$"}"#, auth: nil)
            #expect(json.status == 200 && json.headers["set-cookie"] != nil)
            let wrong = try await h.request(.POST, "/_session", body: #"{"name":"ann","password":"nope"}"#, auth: nil)
            #expect(wrong.status == 401 && wrong.headers["set-cookie"] == nil)
            #expect(wrong["error"] == "unauthorized")

            // Forged, tampered and garbage cookies are refused; no login answers with a null name.
            let value = String(cookie.dropFirst("AuthSession=".count))
            // A character in the middle (the last may carry only padding bits).
            var characters = Array(value)
            characters[characters.count / 2] = characters[characters.count / 2] == "A" ? "B" : "A"
            let tampered = "AuthSession=" + String(characters)
            for bad in [tampered, "AuthSession=bm9ib2R5OjA6MA", "AuthSession=%%%"] {
                let reply = try await h.request(.GET, "/_all_dbs", headers: [("Cookie", bad)], auth: nil)
                #expect(reply.status == 401, "\(bad)")
            }
            let anonymous = try await h.request(.GET, "/_session", auth: nil)
            #expect(anonymous.status == 200 && anonymous["userCtx"]?["name"] == .null)

            // Logging out clears the cookie in the client.
            let logout = try await h.request(.DELETE, "/_session", headers: [("Cookie", cookie)], auth: nil)
            #expect(logout.status == 200)
            #expect(logout.headers["set-cookie"]?.hasPrefix("AuthSession=;") == true)
        }
    }

    @Test func sessionCookiesExpireRefreshAndEndWithTheirUser() throws {
        let cookies = SessionCookies(secret: Data(repeating: 7, count: 32), timeout: .seconds(600))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let users = ListenerAuthenticator.users(["ann:x": "pw"])
        let value = cookies.value(user: "ann:x", userKey: users.sessionKey("ann:x") ?? [], now: start)
        #expect(cookies.verify(value, now: start.addingTimeInterval(30), userKey: users.sessionKey)?.user == "ann:x")
        #expect(cookies.verify(value, now: start.addingTimeInterval(599), userKey: users.sessionKey) != nil)
        #expect(cookies.verify(value, now: start.addingTimeInterval(601), userKey: users.sessionKey) == nil)
        #expect(!cookies.needsRefresh(issued: start, now: start.addingTimeInterval(30)))
        #expect(cookies.needsRefresh(issued: start, now: start.addingTimeInterval(61)))
        // Another node's secret, a new password or a removed user: the cookie no longer verifies.
        #expect(SessionCookies(secret: Data(repeating: 8, count: 32), timeout: .seconds(600)).verify(value, now: start, userKey: users.sessionKey) == nil)
        #expect(cookies.verify(value, now: start, userKey: ListenerAuthenticator.users(["ann:x": "new"]).sessionKey) == nil)
        #expect(cookies.verify(value, now: start, userKey: ListenerAuthenticator.users(["bob": "pw"]).sessionKey) == nil)
    }

    /// Failures slow down further attempts for that address and user; the right password still works.
    @Test func repeatedFailuresSlowGuessingButNeverLockAUserOut() async throws {
        let h = try await ListenerHarness(authFailuresPerMinute: 3)
        try await withCleanup({ await h.shutdown() }) {
            let wrong = "Basic " + Data("\(ListenerHarness.user):nope".utf8).base64EncodedString()
            var statuses: [Int] = []
            for _ in 0..<5 { statuses.append(try await h.request(.GET, "/", auth: wrong).status) }
            #expect(statuses.allSatisfy { $0 == 401 })
            // Someone guessing from this address cannot lock the real user out.
            #expect(try await h.request(.GET, "/").status == 200)
        }
        let limiter = AuthRateLimiter(limit: 3)
        for _ in 0..<3 { limiter.recordFailure(address: "10.0.0.1", user: "ann") }
        #expect(limiter.delay(address: "10.0.0.1", user: "ann") == .milliseconds(100))
        limiter.recordFailure(address: "10.0.0.1", user: "ann")
        #expect(limiter.delay(address: "10.0.0.1", user: "ann") == .milliseconds(200))
        for _ in 0..<8 { limiter.recordFailure(address: "10.0.0.1", user: "ann") }
        #expect(limiter.delay(address: "10.0.0.1", user: "ann") == .seconds(5))
        // Another user, or another address, is not slowed; a success clears the count.
        #expect(limiter.delay(address: "10.0.0.1", user: "bob") == .zero)
        #expect(limiter.delay(address: "10.0.0.2", user: "ann") == .zero)
        limiter.recordSuccess(address: "10.0.0.1", user: "ann")
        #expect(limiter.delay(address: "10.0.0.1", user: "ann") == .zero)
        // Guessing across made-up names from one address (each a costly hash check) slows that address.
        for i in 0..<20 { limiter.recordFailure(address: "10.0.0.1", user: "made-up-\(i)") }
        #expect(limiter.delay(address: "10.0.0.1", user: "carol") == .seconds(5))
        #expect(limiter.delay(address: "10.0.0.2", user: "carol") == .zero)
    }

    @Test func aNodesDirectoryIsTheOwnersAlone() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-mode-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let previous = umask(0o022)
        defer { umask(previous) }
        let node = try NodeDirectory(url: url)
        _ = try node.sessionSecret()
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode(url.path) == 0o700)
        #expect(try mode(url.appendingPathComponent(".node").path) == 0o700)
        #expect(try mode(url.appendingPathComponent(".node/session-secret").path) == 0o600)
    }

    @Test func identitySurvivesRestartAndPlaintextIsRefused() async throws {
        let first = try await ListenerHarness()
        let fingerprint = try #require(first.listener.tlsIdentity?.fingerprint)
        let uuid = first.node.uuid
        let port = try #require(first.listener.port)
        // Plain HTTP to the TLS port gets no HTTP answer.
        let plain = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                               configuration: .init(timeout: .init(connect: .seconds(2), read: .seconds(5))))
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/")
        request.headers.add(name: "Authorization", value: ListenerHarness.authorization)
        do {
            let response = try await plain.execute(request, timeout: .seconds(5))
            Issue.record("plain HTTP on the TLS port got an HTTP answer: \(response.status)")
        } catch {
            // Expected: the TLS listener never speaks plain HTTP.
        }
        try await plain.shutdown()
        let keyFile = first.directory.appendingPathComponent(".node/tls/key.pem").path
        let mode = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        await first.shutdown(removeDirectory: false)

        let second = try await ListenerHarness(directory: first.directory)
        try await withCleanup({ await second.shutdown() }) {
            #expect(second.listener.tlsIdentity?.fingerprint == fingerprint)
            #expect(second.node.uuid == uuid)
            let root = try await second.request(.GET, "/")
            #expect(root["uuid"]?.string == uuid)
        }
    }

    @Test func aClientPinnedToAnotherCertificateIsRefused() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let other = try TLSIdentity.makeSelfSigned(commonName: "other")
            #expect(other.fingerprint != h.listener.tlsIdentity?.fingerprint)
            var configuration = HTTPClient.Configuration(timeout: .init(connect: .milliseconds(500), read: .seconds(5)))
            configuration.tlsConfiguration = try other.pinningClientConfiguration()
            let pinned = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            await #expect(throws: (any Error).self) {
                _ = try await pinned.execute(HTTPClientRequest(url: h.base + "/"), timeout: .seconds(5))
            }
            try await pinned.shutdown()
        }
    }

    /// Clients that trust cert.pem and check names can reach the node by its LAN
    /// addresses and its `.local` name, not only by localhost.
    @Test func theNodeCertificateNamesItsAddressesAndHostName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-sans-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let identity = try NodeDirectory(url: dir).tlsIdentity()
        let certificate = try Certificate(derEncoded: identity.certificateDER)
        let sans = try #require(try certificate.extensions.subjectAlternativeNames)
        var names: Set<String> = [], addresses: Set<[UInt8]> = []
        for san in sans {
            switch san {
            case .dnsName(let name): names.insert(name)
            case .ipAddress(let bytes): addresses.insert(Array(bytes.bytes))
            default: break
            }
        }
        for ip in LocalAddresses.ipv4() + ["127.0.0.1", "::1"] {
            #expect(addresses.contains(try #require(TLSIdentity.ipAddressBytes(ip))), "\(ip) missing from \(sans)")
        }
        let host = try #require(ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init))
        #expect(names.isSuperset(of: ["localhost", host, host + ".local"]), "\(names)")
        // The same certificate after a restart: peers pin it.
        #expect(try NodeDirectory(url: dir).tlsIdentity().fingerprint == identity.fingerprint)
    }

    @Test func importedPEMIdentityIsServed() async throws {
        let made = try TLSIdentity.makeSelfSigned(commonName: "imported", hosts: ["node.local"])
        let imported = try TLSIdentity(certificatePEM: made.certificatePEM, privateKeyPEM: made.privateKeyPEM)
        #expect(imported.fingerprint == made.fingerprint)
        #expect(imported.fingerprint.count == 43 && !imported.fingerprint.contains("="))
        let other = try TLSIdentity.makeSelfSigned(commonName: "x")
        #expect(throws: SyncError.self) { try TLSIdentity(certificatePEM: made.certificatePEM, privateKeyPEM: other.privateKeyPEM) }
        #expect(throws: (any Error).self) { try TLSIdentity(certificatePEM: "garbage", privateKeyPEM: "garbage") }
    }

    /// A peer that closes before any certificate (here: plain HTTP on the port) is a
    /// connection failure a replicator retries, not a permanent identity error.
    @Test func probingAPortWithoutTLSIsAConnectionFailure() async throws {
        let h = try await ListenerHarness(tls: false)
        try await withCleanup({ await h.shutdown() }) {
            let port = try #require(h.listener.port)
            do {
                _ = try await CertificateProbe.certificate(host: "127.0.0.1", port: port, timeout: .seconds(10))
                Issue.record("a plain HTTP port presented a certificate")
            } catch let error as SyncError {
                guard case .connectionFailed = error else { throw error }
                #expect(!Replicator.isPermanent(error))
            }
            // Nobody listening: the connection error, retried too (and no trap for an unfulfilled promise).
            await h.listener.stop()
            do {
                _ = try await CertificateProbe.certificate(host: "127.0.0.1", port: port, timeout: .seconds(10))
                Issue.record("a closed port presented a certificate")
            } catch {
                #expect(!Replicator.isPermanent(error), "\(error)")
            }
        }
    }
}
