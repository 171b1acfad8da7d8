import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore

/// A collection's validator, CouchDB's `validate_doc_update` in Swift.
@Suite struct ValidatorTests {
    struct MissingTitle: Error, CustomStringConvertible {
        var description: String { "a task needs a title" }
    }

    static func requireTitle(appliesToLocalSaves: Bool) -> DocumentValidator {
        DocumentValidator(appliesToLocalSaves: appliesToLocalSaves) { proposed, _, _ in
            if !proposed.isDeleted, proposed.string(forKey: "title") == nil { throw MissingTitle() }
        }
    }

    @Test func localSavesAreCheckedOnlyWhenAsked() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let tasks = try db.defaultCollection()
        tasks.setValidator(Self.requireTitle(appliesToLocalSaves: false))
        try tasks.save(MutableDocument(id: "untitled"))
        #expect(try tasks.document(id: "untitled") != nil)

        tasks.setValidator(Self.requireTitle(appliesToLocalSaves: true))
        #expect(throws: StoreError.rejected(documentID: "other", reason: "a task needs a title")) {
            try tasks.save(MutableDocument(id: "other"))
        }
        #expect(try tasks.document(id: "other") == nil)
        let titled = MutableDocument(id: "other")
        titled.setString("Buy milk", forKey: "title")
        try tasks.save(titled)
        // A deletion is a revision too: this validator lets it through.
        try tasks.delete(id: "untitled")

        tasks.setValidator(nil)
        try tasks.save(MutableDocument(id: "free"))
        #expect(try tasks.count == 2)
    }

    @Test func theValidatorSeesTheCurrentRevisionAndTheAuthor() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let tasks = try db.defaultCollection()
        let seen = Mutex<[(String?, String?, WriteAuthor)]>([])
        tasks.setValidator(DocumentValidator(appliesToLocalSaves: true) { proposed, current, author in
            seen.withLock { $0.append((proposed.string(forKey: "v"), current?.string(forKey: "v"), author)) }
            // Only admins may change a document once written.
            if current != nil, !author.roles.contains("_admin") { throw MissingTitle() }
        })
        let doc = MutableDocument(id: "d")
        doc.setString("one", forKey: "v")
        try tasks.save(doc)
        doc.setString("two", forKey: "v")
        #expect(throws: StoreError.self) { try tasks.save(doc) }
        let (rev, _) = try tasks.putRevision(
            id: "d", parentRev: try #require(tasks.document(id: "d")?.revisionID), body: CanonicalBody(object: ["v": "three"]), deleting: false,
            author: WriteAuthor(name: "ann", roles: ["_admin"], origin: .client))
        #expect(try tasks.document(id: "d")?.revisionID == rev)
        let calls = seen.withLock { $0 }
        #expect(calls.count == 3)
        #expect(calls[0].0 == "one" && calls[0].1 == nil && calls[0].2 == .local)
        #expect(calls[1].0 == "two" && calls[1].1 == "one")
        #expect(calls[2].0 == "three" && calls[2].1 == "one" && calls[2].2.name == "ann" && calls[2].2.origin == .client)
    }
}
