import Testing
@testable import SyncNodeDiscovery
import SyncNodeSync

@Suite struct ServiceRecordTests {
    let record = ServiceRecord(
        name: "kitchen", port: 5984, uuid: "3f2c", keyspaces: ["default", "app.work.tasks"].compactMap(Keyspace.init), tls: true,
        fingerprint: "AbC-_x", requiresAuth: true)

    @Test func txtHasDesignFieldsInOrder() {
        #expect(record.txt == ["v=1", "uuid=3f2c", "dbs=default,app.work.tasks", "tls=1", "fp=AbC-_x", "auth=basic"])
    }

    @Test func roundTripsInAnyOrder() throws {
        let parsed = try ServiceRecord(name: "kitchen", port: 5984, txt: record.txt.reversed() + ["extra=ignored"])
        #expect(parsed == record)
    }

    @Test func plainHTTPWithoutAuth() throws {
        let plain = ServiceRecord(name: "n", port: 1, uuid: "u", keyspaces: [], tls: false, fingerprint: nil, requiresAuth: false)
        #expect(plain.txt == ["v=1", "uuid=u", "dbs=", "tls=0", "auth=none"])
        #expect(try ServiceRecord(name: "n", port: 1, txt: plain.txt) == plain)
    }

    @Test func dbsFitsInOneTXTString() {
        let many = (0..<100).map { Keyspace.database("database-\($0)") }
        let record = ServiceRecord(name: "n", port: 1, uuid: "u", keyspaces: many, tls: false, fingerprint: nil, requiresAuth: false)
        let dbs = record.txt[2]
        #expect(dbs.utf8.count <= 255)
        #expect(dbs.hasPrefix("dbs=database-0,database-1,"))
        #expect(dbs.utf8.count > 240)  // filled, not cut short
        // The reader learns that there is more (GET /_node/keyspaces lists it all).
        #expect(record.txt.contains("more=1") && !self.record.txt.contains("more=1"))
        let seen = try? ServiceRecord(name: "n", port: 1, txt: record.txt)
        #expect(seen?.hasMore == true && seen?.keyspaces.count ?? 0 < many.count)
    }

    /// Each `dbs` entry is read as a keyspace once, here; one that is none (`a.b`) is skipped.
    @Test func dbsIsReadAsKeyspaces() throws {
        let parsed = try ServiceRecord(name: "n", port: 1, txt: ["v=1", "uuid=u", "dbs=notes,a.b,db.app.tasks,", "tls=0"])
        #expect(parsed.keyspaces.map(\.name) == ["notes", "db.app.tasks"])
        #expect(parsed.keyspaces.last?.database == "db" && parsed.keyspaces.last?.collection == "tasks")
    }

    @Test func firstOccurrenceOfAKeyWins() throws {
        let parsed = try ServiceRecord(name: "n", port: 1, txt: ["v=1", "uuid=first", "uuid=second", "tls=0"])
        #expect(parsed.uuid == "first")
    }

    @Test(arguments: [
        ["uuid=u", "tls=0"],                 // no version
        ["v=2", "uuid=u", "tls=0"],          // another version
        ["v=1", "tls=0"],                    // no uuid
        ["v=1", "uuid=", "tls=0"],           // empty uuid
        ["v=1", "uuid=u", "tls=1"],          // TLS without a fingerprint
    ])
    func rejectsRecordsThatAreNotOurs(txt: [String]) {
        #expect(throws: DiscoveryError.self) { try ServiceRecord(name: "x", port: 1, txt: txt) }
    }
}
