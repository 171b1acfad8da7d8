import Foundation
import Testing
@testable import SyncNodeStore

/// Documents whose body holds CouchDB attachments (`_attachments`, as replication from CouchDB
/// or PouchDB stores them) are read, edited and saved again from Swift with them intact.
@Suite struct AttachmentsBodyTests {
    struct Note: Codable {
        @DocumentID var id: String? = nil
        var title: String
    }

    /// A document as a pull from CouchDB leaves it: a property and an attachment.
    static func fromCouchDB(_ c: DocumentCollection) throws -> Blob {
        let photo = Blob(contentType: "image/jpeg", data: Data("jpeg bytes".utf8))
        try c.database.blobStore.store(photo)
        try c.insertRevision(id: "d", history: ["1-aaaa"], deleted: false,
                             body: ["title": "t", "_attachments": .dictionary(["photo.jpg": .blob(photo)])])
        return photo
    }

    @Test func editedAndSavedWithItsAttachmentsIntact() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let photo = try Self.fromCouchDB(c)
        let edit = try #require(try c.document(id: "d")).toMutable()
        edit.setString("edited", forKey: "title")
        try c.save(edit)
        let saved = try #require(try c.document(id: "d"))
        #expect(saved.string(forKey: "title") == "edited" && saved.revisionID?.hasPrefix("2-") == true)
        let kept = try #require(saved.dictionary(forKey: "_attachments")?.blob(forKey: "photo.jpg"))
        #expect(kept.digest == photo.digest && kept.content == Data("jpeg bytes".utf8))

        // A model that knows nothing of attachments keeps them too.
        var note = try #require(try c.document(id: "d", as: Note.self))
        note.title = "from a model"
        try c.save(from: note)
        #expect(try c.document(id: "d")?.dictionary(forKey: "_attachments")?.blob(forKey: "photo.jpg")?.digest == photo.digest)

        // Attachments change as blobs: add one, remove the other.
        let change = try #require(try c.document(id: "d")).toMutable()
        let attachments = try #require(change.dictionary(forKey: "_attachments"))
        attachments.setBlob(Blob(contentType: "text/plain", data: Data("notes".utf8)), forKey: "notes.txt")
        attachments.removeValue(forKey: "photo.jpg")
        try c.save(change)
        let changed = try #require(try c.document(id: "d")?.dictionary(forKey: "_attachments"))
        #expect(changed.keys == ["notes.txt"] && changed.blob(forKey: "notes.txt")?.content == Data("notes".utf8))
    }

    @Test func otherUnderscoreMembersAndMalformedAttachmentsAreRefused() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        _ = try Self.fromCouchDB(c)
        let bad = try #require(try c.document(id: "d")).toMutable()
        bad.setString("not attachments", forKey: "_attachments")
        #expect(throws: StoreError.self) { try c.save(bad) }
        #expect(throws: StoreError.reservedProperty("_secret")) { try c.save(try MutableDocument(id: "x", json: #"{"_secret":1}"#)) }
        #expect(try c.document(id: "d")?.revisionID == "1-aaaa")
    }
}
