import Foundation
import Testing
@testable import SyncNodeStore

/// Codable models as documents: every supported type, IDs, revisions and
/// conflicts, query rows, and errors that name the key path.
final class CodableModelTests: TasksFixture {
    enum Unit: String, Codable { case cm, inch }
    enum Priority: Int, Codable { case low = 1, high = 9 }

    struct Dimensions: Codable, Equatable {
        var width: Int
        var height: Double
        var unit: Unit
        var label: String?
    }

    struct Everything: Codable, Equatable {
        @DocumentID var id: String? = nil
        var string: String
        var int: Int, int8: Int8, int16: Int16, int32: Int32, int64: Int64
        var uint: UInt, uint8: UInt8, uint16: UInt16, uint32: UInt32, uint64: UInt64
        var float: Float, double: Double, decimal: Decimal
        var bool: Bool
        var date: Date
        var data: Data
        var blob: Blob
        var url: URL
        var uuid: UUID
        var unit: Unit
        var priority: Priority
        var present: String?
        var absent: String?
        var nested: Dimensions
        var nestedArray: [Dimensions]
        var optionalModels: [Dimensions?]
        var matrix: [[Int]]
        var byName: [String: Dimensions]
        var optionalStrings: [String?]
    }

    struct Todo: Codable, Equatable {
        @DocumentID var id: String? = nil
        var title: String
        var completed = false
    }

    final class Note: Codable {
        @DocumentID var id: String?
        var text: String
        init(text: String) { self.text = text }
    }

    struct NoID: Codable { var title: String }

    func sample() -> Everything {
        Everything(
            id: nil, string: "héllo \u{1F600}",
            int: -42, int8: -8, int16: 1600, int32: -32_000_000, int64: Int64.min,
            uint: 7, uint8: 255, uint16: 65535, uint32: 4_000_000_000, uint64: UInt64(Int64.max),
            float: 1.5, double: -3.25, decimal: Decimal(string: "12.5") ?? 0,
            bool: true,
            date: Date(timeIntervalSince1970: 1_700_000_000.5),
            data: Data([0, 1, 2, 254, 255]),
            blob: Blob(contentType: "text/plain", data: Data("blob text".utf8)),
            url: URL(string: "https://example.com/a?b=c")!,
            uuid: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
            unit: .inch, priority: .high,
            present: "here", absent: nil,
            nested: Dimensions(width: 3, height: 4.5, unit: .cm, label: nil),
            nestedArray: [Dimensions(width: 1, height: 2, unit: .cm, label: "a"), Dimensions(width: 5, height: 6.25, unit: .inch, label: nil)],
            optionalModels: [nil, Dimensions(width: 9, height: 9, unit: .cm, label: "z")],
            matrix: [[1, 2], [], [3]],
            byName: ["box": Dimensions(width: 10, height: 20, unit: .cm, label: "box")],
            optionalStrings: ["x", nil, "y"])
    }

    @Test func everySupportedTypeRoundTrips() throws {
        let model = sample()
        try tasks.save(from: model)
        let id = try #require(model.id)
        let loaded = try #require(try tasks.document(id: id, as: Everything.self))
        #expect(loaded == model)
        #expect(loaded.data == model.data)
        #expect(loaded.blob.content == Data("blob text".utf8))
        #expect(loaded.nestedArray[1].label == nil)

        // The stored body: ID and nil optionals absent, dates as ISO-8601 text, Data as a blob.
        let stored = try #require(try tasks.document(id: id))
        #expect(!stored.contains(key: "id") && !stored.contains(key: "absent"))
        #expect(stored.string(forKey: "date") == "2023-11-14T22:13:20.500Z")
        #expect(stored.blob(forKey: "data")?.content == Data([0, 1, 2, 254, 255]))
        #expect(stored.string(forKey: "url") == "https://example.com/a?b=c")
        #expect(stored.string(forKey: "unit") == "inch" && stored.int(forKey: "priority") == 9)
        #expect(stored.array(forKey: "optionalStrings")?.toJSON() == #"["x",null,"y"]"#)
        #expect(stored.dictionary(forKey: "nested")?.contains(key: "label") == false)
    }

    @Test func idIsGeneratedWrittenBackAndReused() throws {
        let task = Todo(title: "milk")
        #expect(task.id == nil)
        try tasks.save(from: task)
        let id = try #require(task.id)
        #expect(!id.isEmpty)
        var edited = task
        edited.title = "oat milk"
        try tasks.save(from: edited)
        #expect(try tasks.count == 1)
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "oat milk")

        // A class model, as Couchbase Lite recommends; an ID given by hand is kept.
        let note = Note(text: "hi")
        note.id = "note-1"
        try tasks.save(from: note)
        #expect(note.id == "note-1")
        #expect(try tasks.document(id: "note-1")?.string(forKey: "text") == "hi")

        #expect(try tasks.document(id: "nope", as: Todo.self) == nil)
        let noID = #expect(throws: StoreError.self) { try self.tasks.save(from: NoID(title: "x")) }
        #expect(noID.map { "\($0)" }?.contains("@DocumentID") == true)
    }

    @Test func failOnConflictMeansChangedSinceRead() throws {
        let original = Todo(title: "a")
        try tasks.save(from: original)
        let id = try #require(original.id)
        var first = try #require(try tasks.document(id: id, as: Todo.self))
        var second = try #require(try tasks.document(id: id, as: Todo.self))

        first.title = "first"
        try tasks.save(from: first, concurrencyControl: .failOnConflict)  // nothing changed since it was read
        second.title = "second"
        #expect(throws: StoreError.conflict(documentID: id)) { try self.tasks.save(from: second, concurrencyControl: .failOnConflict) }
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "first")

        // Last write wins overwrites, and the model then knows the new revision.
        try tasks.save(from: second)
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "second")
        second.completed = true
        try tasks.save(from: second, concurrencyControl: .failOnConflict)

        // A model made with an existing ID has read nothing: a conflict.
        let stranger = Todo(id: id, title: "stranger")
        #expect(throws: StoreError.conflict(documentID: id)) { try self.tasks.save(from: stranger, concurrencyControl: .failOnConflict) }
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "second")
    }

    @Test func conflictHandlerMergesOrGivesUp() throws {
        let task = Todo(title: "a")
        try tasks.save(from: task)
        let id = try #require(task.id)
        var mine = try #require(try tasks.document(id: id, as: Todo.self))
        var theirs = try #require(try tasks.document(id: id, as: Todo.self))
        theirs.completed = true
        try tasks.save(from: theirs)

        // No conflict: the handler is not called.
        var calls = 0
        var fresh = try #require(try tasks.document(id: id, as: Todo.self))
        fresh.title = "fresh"
        #expect(try tasks.save(from: fresh) { _, _ in calls += 1; return false })
        #expect(calls == 0)

        mine.title = "mine"
        let saved = try tasks.save(from: mine) { new, existing in
            calls += 1
            #expect(existing?.title == "fresh" && existing?.completed == true)
            new.completed = existing?.completed ?? false
            return true
        }
        #expect(saved && calls == 1)
        let merged = try #require(try tasks.document(id: id, as: Todo.self))
        #expect(merged.title == "mine" && merged.completed)
        // A struct passed by value still holds the pre-merge content, so it keeps its old
        // revision: saving it again meets the conflict again instead of undoing the merge.
        #expect(throws: StoreError.conflict(documentID: id)) { try self.tasks.save(from: mine, concurrencyControl: .failOnConflict) }

        var stale = theirs
        stale.title = "stale"
        #expect(try tasks.save(from: stale) { _, _ in false } == false)
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "mine")

        // After a delete the handler sees nil.
        try tasks.delete(id: id)
        var seenNil = false
        #expect(try tasks.save(from: merged) { _, existing in seenNil = existing == nil; return true })
        #expect(seenNil)
        #expect(try tasks.document(id: id, as: Todo.self)?.title == "mine")
    }

    @Test func deleteAndPurgeForModels() throws {
        let a = Todo(title: "a")
        let b = Todo(title: "b")
        try tasks.save(from: a)
        try tasks.save(from: b)
        let aID = try #require(a.id)
        let stale = try #require(try tasks.document(id: aID, as: Todo.self))
        var newer = try #require(try tasks.document(id: aID, as: Todo.self))
        newer.title = "newer"
        try tasks.save(from: newer)
        #expect(throws: StoreError.conflict(documentID: a.id!)) { try self.tasks.delete(for: stale, concurrencyControl: .failOnConflict) }
        try tasks.delete(for: newer, concurrencyControl: .failOnConflict)
        #expect(try tasks.document(id: aID) == nil)
        // A tombstone stays for replication; a purge leaves nothing.
        #expect(try tasks.changes(since: 0).contains { $0.id == a.id && $0.deleted })
        try tasks.purge(for: b)
        #expect(try !tasks.changes(since: 0).contains { $0.id == b.id })
        #expect(throws: StoreError.self) { try self.tasks.delete(for: Todo(title: "never saved")) }
    }

    @Test func queryRowsDecodeAndRememberTheirRevision() throws {
        for title in ["b", "a", "c"] { try tasks.save(from: Todo(title: title)) }
        // The seed's two shapes: selected properties, and `* AS data`.
        let rows = try db.createQuery("SELECT meta().id, title, completed FROM tasks ORDER BY title").execute()
        var list = try rows.data(as: Todo.self)
        #expect(list.map(\.title) == ["a", "b", "c"])
        #expect(list.allSatisfy { $0.id != nil })
        let data = try db.createQuery("SELECT meta().id AS id, * AS data FROM tasks ORDER BY title").execute()
        var viaData = try data.data(as: Todo.self, dataKey: "data")
        #expect(viaData == list)

        // Someone changes "a" after the query ran: saving the row's model must conflict.
        var other = try #require(try tasks.document(id: list[0].id!, as: Todo.self))
        other.completed = true
        try tasks.save(from: other)
        list[0].title = "from list"
        viaData[0].title = "from data"
        #expect(throws: StoreError.conflict(documentID: list[0].id!)) { try self.tasks.save(from: list[0], concurrencyControl: .failOnConflict) }
        #expect(throws: StoreError.conflict(documentID: list[0].id!)) { try self.tasks.save(from: viaData[0], concurrencyControl: .failOnConflict) }
        list[1].title = "b2"
        try tasks.save(from: list[1], concurrencyControl: .failOnConflict)

        // Rows that merge documents do not know a revision: the stored one counts as read.
        let distinct = try db.createQuery("SELECT DISTINCT meta().id AS id, title, completed FROM tasks WHERE title = 'c'").execute()
        var c = try #require(try distinct.data(as: Todo.self).first)
        #expect(c.id != nil)
        c.title = "c2"
        try tasks.save(from: c, concurrencyControl: .failOnConflict)
        #expect(try tasks.document(id: c.id!, as: Todo.self)?.title == "c2")

        // A join: the `alias.*` column says which document the model is.
        let owners = try db.createCollection(name: "owners")
        let owner = MutableDocument(id: "o1")
        owner.setString(list[1].id!, forKey: "task")
        try owners.save(owner)
        let joined = try db.createQuery("SELECT o.*, t.* AS task FROM owners AS o JOIN tasks AS t ON t.title = 'b2' AND meta(t).id = o.task").execute()
        let fromJoin = try #require(try joined.data(as: Todo.self, dataKey: "task").first)
        #expect(fromJoin.id == list[1].id && fromJoin.title == "b2")
        #expect(throws: StoreError.self) { try joined.data(as: Todo.self, dataKey: "nope") }
        // Without dataKey, the `meta(t).id` column names the document, revision included.
        let byColumn = try db.createQuery("SELECT meta(t).id AS id, t.title, t.completed FROM owners AS o JOIN tasks AS t ON meta(t).id = o.task").execute()
        var fromColumn = try #require(try byColumn.data(as: Todo.self).first)
        #expect(fromColumn.id == list[1].id)
        try tasks.save(from: fromJoin)
        fromColumn.title = "late"
        #expect(throws: StoreError.conflict(documentID: list[1].id!)) { try self.tasks.save(from: fromColumn, concurrencyControl: .failOnConflict) }
        // Any other column called `id` is an ID read without a revision, never the row's own document.
        let renamed = try db.createQuery("SELECT task AS id, 'x' AS title, false AS completed FROM owners").execute()
        var foreign = try #require(try renamed.data(as: Todo.self).first)
        #expect(foreign.id == list[1].id)
        foreign.title = "x"
        try tasks.save(from: foreign, concurrencyControl: .failOnConflict)
        #expect(try owners.document(id: "o1") != nil && tasks.document(id: list[1].id!, as: Todo.self)?.title == "x")
    }

    struct Item: Codable { var name: String }
    struct Order: Codable {
        var title: String
        var items: [Item]
        var small: Int8?
    }

    @Test func decodingErrorsNameTheKeyPathAndDocument() throws {
        func failure(_ json: String) throws -> StoreError? {
            let doc = try MutableDocument(id: "bad", json: json)
            try tasks.save(doc)
            do {
                _ = try tasks.document(id: "bad", as: Order.self)
                return nil
            } catch let error as StoreError {
                return error
            }
        }
        #expect(try failure(#"{"title":5,"items":[]}"#) == .decodingFailed(type: "Order", documentID: "bad", keyPath: "title", reason: "expected a string, found number 5"))
        #expect(try failure(#"{"title":"t","items":[{"name":"a"},{"name":3}]}"#) == .decodingFailed(type: "Order", documentID: "bad", keyPath: "items[1].name", reason: "expected a string, found number 3"))
        #expect(try failure(#"{"title":"t"}"#) == .decodingFailed(type: "Order", documentID: "bad", keyPath: "items", reason: "the key 'items' is missing"))
        #expect(try failure(#"{"title":"t","items":[],"small":300}"#) == .decodingFailed(type: "Order", documentID: "bad", keyPath: "small", reason: "number 300 does not fit in Int8"))
        #expect(try failure(#"{"title":null,"items":[]}"#) == .decodingFailed(type: "Order", documentID: "bad", keyPath: "title", reason: "expected a value of type String, found null"))
        let message = try #require(try failure(#"{"title":"t","items":{"name":"x"}}"#)).description
        #expect(message == "cannot decode Order from document 'bad' at items: expected an array, found an object")
        // Query rows name no document.
        let row = try #require(try db.createQuery("SELECT DISTINCT 1 AS title FROM tasks").execute().allResults().first)
        #expect(throws: StoreError.decodingFailed(type: "Todo", documentID: nil, keyPath: "title", reason: "expected a string, found number 1")) {
            try row.data(as: Todo.self)
        }
    }

    @Test func encodingRejectsValuesWithoutAStoredForm() throws {
        struct Measure: Codable {
            @DocumentID var id: String? = nil
            var values: [Double]
            var big: UInt64 = 0
        }
        #expect(throws: StoreError.invalidValue("cannot encode Measure at 'values[1]': nan is not a JSON number")) {
            try self.tasks.save(from: Measure(values: [1, .nan]))
        }
        #expect(throws: StoreError.invalidValue("cannot encode Measure at 'big': 18446744073709551615 does not fit in 64 signed bits")) {
            try self.tasks.save(from: Measure(values: [], big: .max))
        }
        #expect(try tasks.count == 0)
        // A model that is not an object cannot be a document.
        #expect(throws: StoreError.self) { try self.tasks.save(from: ["a", "b"]) }
    }

    struct Line: Codable, Equatable {
        @DocumentID var id: String? = nil
        var product: Todo
        var unitPrice: Decimal
        var weight: Float
    }

    @Test func nestedIDsFloatsAndDecimalsKeepTheirValue() throws {
        let line = Line(product: Todo(id: "p1", title: "tea"), unitPrice: Decimal(string: "19.99") ?? 0, weight: 0.1)
        try tasks.save(from: line)
        let lineID = try #require(line.id)
        let stored = try #require(try tasks.document(id: lineID))
        #expect(stored.dictionary(forKey: "product")?.string(forKey: "id") == "p1")
        #expect(stored.documentValue(forKey: "weight") == .double(0.1))
        let loaded = try #require(try tasks.document(id: stored.id, as: Line.self))
        #expect(loaded == line && loaded.product.id == "p1")
        #expect(loaded.unitPrice == Decimal(string: "19.99"))
        try tasks.save(MutableDocument(id: "heavy", data: ["product": ["title": "t", "completed": false], "unitPrice": 1, "weight": 1e300]))
        #expect(throws: StoreError.decodingFailed(type: "Line", documentID: "heavy", keyPath: "weight", reason: "number 1e+300 does not fit in Float")) {
            try self.tasks.document(id: "heavy", as: Line.self)
        }
    }

    /// A hand-written `encode(to:)` that writes a single value through a super encoder.
    struct Tagged: Encodable {
        @DocumentID var id: String? = nil
        enum Keys: String, CodingKey { case tag }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var tag = container.superEncoder(forKey: .tag).singleValueContainer()
            try tag.encode("red")
        }
    }

    @Test func superEncodersKeepWhatTheyEncode() throws {
        let tagged = Tagged()
        try tasks.save(from: tagged)
        #expect(try tasks.document(id: #require(tagged.id))?.string(forKey: "tag") == "red")
    }

    @Test func documentIDWithOtherCoders() throws {
        let task = Todo(id: "t1", title: "x")
        let json = String(decoding: try JSONEncoder().encode(task), as: UTF8.self)
        #expect(json.contains(#""id":"t1""#))
        let fromJSON = try JSONDecoder().decode(Todo.self, from: Data(#"{"title":"y","completed":false}"#.utf8))
        #expect(fromJSON.id == nil && fromJSON.title == "y")
        let withID = try JSONDecoder().decode(Todo.self, from: Data(#"{"id":"z","title":"y","completed":true}"#.utf8))
        #expect(withID.id == "z")
        // Setting the ID of a copy makes it another document; the original keeps its own.
        var copy = withID
        copy.id = "other"
        #expect(withID.id == "z" && copy.id == "other")
    }
}
