import Foundation
import SyncNodeSync
import Testing
@testable import SyncNodeDiscovery

@Suite struct PairingURLTests {
    let fingerprint = "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg"
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"

    @Test(arguments: [
        ("ann", "s3cret"),
        ("ann@example.com", "p@ss:w/rd?#[]%20 é"),
        ("a b", ""),
    ])
    func credentialsWithSpecialCharactersRoundTrip(user: String, password: String) throws {
        let built = PairingURL(base: try #require(URL(string: "https://10.0.0.5:4984/")), database: "default",
                               user: user, password: password, uuid: uuid, fingerprint: fingerprint)
        let parsed = try PairingURL(string: built.url.absoluteString)
        #expect(parsed.user == user)
        #expect(parsed.password == password)
        #expect(parsed.host == "10.0.0.5")
        #expect(parsed.port == 4984)
        #expect(parsed.database == "default")
        #expect(parsed.uuid == uuid)
        #expect(parsed.fingerprint == fingerprint)
        #expect(parsed == built)
    }

    @Test func ipv6HostsKeepTheirBrackets() throws {
        let built = PairingURL(base: try #require(URL(string: "https://[fe80::1]:4984/")), database: "app.work.tasks",
                               user: nil, password: nil, uuid: uuid, fingerprint: fingerprint)
        #expect(built.url.absoluteString.hasPrefix("https://[fe80::1]:4984/app.work.tasks?uuid="))
        let parsed = try PairingURL(string: built.url.absoluteString)
        #expect(parsed.host == "fe80::1")
        #expect(parsed.database == "app.work.tasks")
        #expect(parsed.user == nil)
    }

    @Test func aDiscoveredPeersURLIsAPairingURL() throws {
        let record = ServiceRecord(name: "n", port: 7000, uuid: uuid, keyspaces: [.database("default")], tls: true, fingerprint: fingerprint, requiresAuth: true)
        let peer = Peer(record: record, host: "fe80::2%eth0", addresses: ["fe80::2%eth0"])
        let parsed = try PairingURL(string: peer.url(database: "default", user: "u", password: "p w").absoluteString)
        #expect(parsed.host == "fe80::2%eth0")
        #expect(parsed.port == 7000)
        #expect(parsed.password == "p w")
        #expect(parsed.fingerprint == fingerprint)
    }

    @Test(arguments: [
        "not a url",
        "ftp://host:1/db?uuid=u&fp=x",
        "https://host:1/?uuid=u&fp=n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg",          // no database
        "https://host:1/db?fp=n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg",               // no uuid
        "https://host:1/db?uuid=u",                                                        // https without fp
        "https://host:1/db?uuid=u&fp=short",                                               // not a fingerprint
    ])
    func rejectsWhatIsNotAPairingURL(text: String) {
        #expect(throws: SyncError.self) { try PairingURL(string: text) }
    }

    @Test func plainHTTPNeedsNoFingerprint() throws {
        let parsed = try PairingURL(string: "http://127.0.0.1:5984/db?uuid=u")
        #expect(parsed.fingerprint == nil)
        #expect(parsed.port == 5984)
    }
}
