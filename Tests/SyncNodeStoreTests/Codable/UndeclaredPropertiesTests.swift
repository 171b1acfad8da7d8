import Foundation
import Testing
@testable import SyncNodeStore

/// Two versions of one app's model: the older one knows fewer properties, here and in a
/// nested object. Its saves must not erase what only the newer one knows.
enum ModelVersions {
    struct Details1: Codable { var color: String }
    struct Details2: Codable { var color: String; var size: Int }

    /// The older app's model.
    struct Item1: Codable {
        @DocumentID var id: String? = nil
        var title: String
        var details: Details1
    }

    /// The newer app's model: a property, an optional and a nested property more.
    struct Item2: Codable {
        @DocumentID var id: String? = nil
        var title: String
        var priority: Int?
        var details: Details2
    }
}

@Suite struct UndeclaredPropertiesTests {
    typealias V = ModelVersions

    @Test func anOlderModelKeepsWhatItDoesNotDeclare() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let newer = V.Item2(id: "i", title: "first", priority: 3, details: .init(color: "red", size: 42))
        try c.save(from: newer)
        try c.save(MutableDocument(id: "raw", json: #"{"title":"t","details":{"color":"c","size":1},"extra":[1]}"#))

        var older = try #require(try c.document(id: "i", as: V.Item1.self))
        older.title = "second"
        older.details.color = "blue"
        try c.save(from: older)
        let stored = try #require(try c.document(id: "i"))
        #expect(stored.string(forKey: "title") == "second")
        #expect(stored.int(forKey: "priority") == 3)
        #expect(stored.dictionary(forKey: "details")?.string(forKey: "color") == "blue")
        #expect(stored.dictionary(forKey: "details")?.int(forKey: "size") == 42)

        // A model never read keeps them too; with .drop the document is exactly the model.
        try c.save(from: V.Item1(id: "raw", title: "u", details: .init(color: "d")))
        #expect(try c.document(id: "raw")?.array(forKey: "extra")?.count == 1)
        try c.save(from: V.Item1(id: "raw", title: "u", details: .init(color: "d")), undeclaredProperties: .drop)
        #expect(try c.document(id: "raw")?.keys == ["details", "title"])
        #expect(try c.document(id: "raw")?.dictionary(forKey: "details")?.keys == ["color"])
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Int)
        case square(side: Int)
    }

    struct Drawing: Codable {
        @DocumentID var id: String? = nil
        var tags: [String: Bool]
        var shape: Shape
    }

    /// A dictionary's keys and an enum's case are the value itself: what the model removed or
    /// changed there is not brought back from the stored document.
    @Test func dictionariesAndEnumsAreWrittenWhole() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(from: Drawing(id: "p", tags: ["a": true, "b": true], shape: .circle(radius: 1)))
        var drawing = try #require(try c.document(id: "p", as: Drawing.self))
        drawing.tags["a"] = nil
        drawing.shape = .square(side: 2)
        try c.save(from: drawing)
        let again = try #require(try c.document(id: "p", as: Drawing.self))
        #expect(again.tags == ["b": true])
        #expect(again.shape == .square(side: 2))
    }

    /// A nil optional is a declared property the model left out: its save removes it.
    @Test func aNilOptionalRemovesItsProperty() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(from: V.Item2(id: "i", title: "t", priority: 3, details: .init(color: "red", size: 1)))
        var item = try #require(try c.document(id: "i", as: V.Item2.self))
        item.priority = nil
        try c.save(from: item)
        #expect(try c.document(id: "i")?.contains(key: "priority") == false)
    }

    /// What is kept is what is stored when the save commits, not when the model was read.
    @Test func keptPropertiesAreReadWhenTheSaveCommits() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(from: V.Item2(id: "i", title: "t", priority: 1, details: .init(color: "red", size: 1)))
        var older = try #require(try c.document(id: "i", as: V.Item1.self))
        var newer = try #require(try c.document(id: "i", as: V.Item2.self))
        newer.priority = 2
        try c.save(from: newer)
        older.title = "older"
        try c.save(from: older)  // last write wins: its title, and the newer save's priority
        #expect(try c.document(id: "i")?.int(forKey: "priority") == 2)
        #expect(try c.document(id: "i")?.string(forKey: "title") == "older")
    }
}
