import Foundation
import Testing
@testable import SyncNodeStore

/// What change events tell: the document as the commit left it, and who changed it.
@Suite struct ChangeEventTests {
    @Test func eachChangeSaysWhatItLeftAndWhoMadeIt() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let heard = Collector<[ChangedDocument]>()
        let token = c.addChangeListener { heard.append($0.documents) }
        defer { token.remove() }
        let one = Collector<DocumentChange>()
        let oneToken = c.addDocumentChangeListener(id: "d") { one.append($0) }
        defer { oneToken.remove() }

        let doc = MutableDocument(id: "d")
        try c.save(doc)                                                         // a local save
        let firstRev = try #require(doc.revisionID)
        try db.inBatch {                                                        // twice in one commit: once, as it ended
            doc.setInt(1, forKey: "n")
            try c.save(doc)
            doc.setInt(2, forKey: "n")
            try c.save(doc)
        }
        let peer = WriteAuthor(origin: .replication(peer: "node-b/db"))
        try c.insertRevision(id: "d", history: ["3-ffff", "2-eeee", "1-dddd"], deleted: false, body: [:], author: peer)  // a pulled branch
        let gone = MutableDocument(id: "gone")
        try c.save(gone)
        try c.purge(id: "gone")

        let all = await heard.wait(count: 5)
        #expect(all.count == 5, "\(all)")
        guard all.count == 5 else { return }
        #expect(all[0] == [ChangedDocument(id: "d", revisionID: firstRev, isDeleted: false, isConflicted: false, origin: .local)])
        #expect(all[1].count == 1 && all[1][0].revisionID == doc.revisionID && all[1][0].revisionID?.hasPrefix("3-") == true)
        // The pulled branch makes a conflict; the winner shown is whichever CouchDB's order picks.
        #expect(all[2].count == 1 && all[2][0].isConflicted && all[2][0].origin == .replication(peer: "node-b/db"))
        #expect(all[2][0].revisionID == (try c.document(id: "d")?.revisionID))
        #expect(all[3] == [ChangedDocument(id: "gone", revisionID: gone.revisionID, isDeleted: false, isConflicted: false, origin: .local)])
        #expect(all[4] == [.removed("gone")] && all[4][0].isRemoved)

        // The document listener heard d's three commits, each with the same details.
        let mine = await one.wait(count: 3)
        #expect(mine.map(\.document) == Array(all[0...2].joined()))
    }

    @Test func aDeletionIsADeletedChange() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "x"))
        let heard = Collector<ChangedDocument>()
        let token = c.addChangeListener { $0.documents.forEach(heard.append) }
        defer { token.remove() }
        try c.delete(id: "x")
        let change = try #require(await heard.wait(count: 1).first)
        #expect(change.isDeleted && !change.isRemoved && change.revisionID?.hasPrefix("2-") == true)
    }

    /// Another process's commits: what they left is read from the store; they count as local.
    @Test func anotherWritersCommitsSayWhatTheyLeft() async throws {
        let dir = try TempDirectory()
        let mine = try dir.open()
        let other = try dir.open()
        defer { try? mine.close(); try? other.close() }
        let heard = Collector<ChangedDocument>()
        let token = try mine.defaultCollection().addChangeListener { $0.documents.forEach(heard.append) }
        defer { token.remove() }
        let doc = MutableDocument(id: "external")
        try other.defaultCollection().save(doc)
        let change = try #require(await heard.wait(count: 1).first)
        #expect(change == ChangedDocument(id: "external", revisionID: doc.revisionID, isDeleted: false, isConflicted: false, origin: .local))
    }

    /// A close listener is told once when the database closes, and at once when it was closed
    /// before it was added; a removed one is not told.
    @Test func closeListenersHearTheCloseOnce() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let before = Collector<String>()
        let removed = Collector<String>()
        let token = db.addCloseListener { before.append("closed") }
        db.addCloseListener { removed.append("closed") }.remove()
        try db.close()
        try db.close()
        #expect(await before.wait(count: 1) == ["closed"])
        let after = Collector<String>()
        _ = db.addCloseListener { after.append("closed") }
        #expect(await after.wait(count: 1) == ["closed"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(before.values.count == 1 && after.values.count == 1 && removed.values.isEmpty)
        token.remove()
    }
}
