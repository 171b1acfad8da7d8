import Foundation
import Testing
@testable import SyncNodeStore

@Suite struct DocumentTests {
    @Test func typedAccessorsAndDefaults() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        let doc = MutableDocument(id: "typed")
        doc.setString("s", forKey: "string")
        doc.setInt(42, forKey: "int")
        doc.setInt64(Int64.max, forKey: "int64")
        doc.setDouble(2.5, forKey: "double")
        doc.setFloat(1.25, forKey: "float")
        doc.setBoolean(true, forKey: "bool")
        doc.setDate(date, forKey: "date")
        doc.setDocumentValue(.null, forKey: "null")
        try doc.setValue(["a": 1, "b": [1, "two"]], forKey: "dict")
        try c.save(doc)

        let read = try #require(try c.document(id: "typed"))
        #expect(read.string(forKey: "string") == "s")
        #expect(read.int(forKey: "int") == 42)
        #expect(read.int64(forKey: "int64") == Int64.max)
        #expect(read.double(forKey: "double") == 2.5)
        #expect(read.float(forKey: "float") == 1.25)
        #expect(read.boolean(forKey: "bool"))
        #expect(abs(try #require(read.date(forKey: "date")).timeIntervalSince(date)) < 0.001)
        #expect(read.string(forKey: "date")?.hasSuffix("Z") == true)
        #expect(read.dictionary(forKey: "dict")?.array(forKey: "b")?.string(at: 1) == "two")
        #expect(read.sequence > 0)
        // Missing keys read as defaults; contains tells them apart from stored defaults.
        #expect(read.string(forKey: "missing") == nil)
        #expect(read.int(forKey: "missing") == 0)
        #expect(read.boolean(forKey: "missing") == false)
        #expect(!read.contains(key: "missing"))
        #expect(read.contains(key: "null"))
        #expect(read.value(forKey: "null") is NSNull)
        #expect(read.count == 9)
        #expect(read.keys == ["bool", "date", "dict", "double", "float", "int", "int64", "null", "string"])
        #expect(read.toDictionary()["int"] as? Int == 42)
        #expect(try DocumentValue(json: read.toJSON()) == DocumentValue.dictionary(read.toMutable().snapshot()))
        // Wrong-type reads give the default, not a crash.
        #expect(read.int(forKey: "string") == 0)
        #expect(read.array(forKey: "int") == nil)
    }

    /// A stored document's mutable copy keeps each member as its stored text until it is read:
    /// what it reads, and what an edit of it saves, must be what a fully parsed copy gives.
    @Test func aStoredDocumentEditsAsAParsedOneWould() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let json = #"{"a":"line\nbreak \"q\" \u0001 é 😀","b":0.1,"c":-1.5e300,"d":[1,{"x":null},[true,false]],"# +
            #""e":{"inner":{"deep":"v"},"list":[1,2]},"f":12345678901234,"g":"","h":{},"i":[],"é":"non-ASCII key"}"#
        try c.save(try MutableDocument(id: "stored", json: json))
        let stored = try #require(try c.document(id: "stored"))
        let expected = try JSONParser.parseObject(stored.toJSON())
        #expect(stored.toMutable().snapshot() == expected)

        // Reading: every member, keys and count, without having parsed the document.
        let fresh = try #require(try c.document(id: "stored")).toMutable()
        #expect(fresh.storage.values.allSatisfy { if case .stored = $0 { true } else { false } })
        #expect(fresh.count == 10)
        #expect(fresh.keys == stored.keys)
        for key in stored.keys { #expect(fresh.documentValue(forKey: key) == expected[key]) }

        // Editing one member, and nested containers live, saves what a parsed copy would.
        let edited = try #require(try c.document(id: "stored")).toMutable()
        let parsed = MutableDocument(id: "parsed", values: expected)
        for doc in [edited, parsed] {
            doc.setString("changed", forKey: "g")
            doc.dictionary(forKey: "e")?.dictionary(forKey: "inner")?.setInt(7, forKey: "deep")
            try doc.array(forKey: "d")?.append("appended")
            doc.removeValue(forKey: "h")
        }
        try c.save(edited)
        let saved = try #require(try c.document(id: "stored"))
        #expect(saved.toJSON() == parsed.toJSON())
        #expect(saved.int(forKey: "f") == 12345678901234)

        // Untouched members are written back as they were stored.
        let untouched = try #require(try c.document(id: "stored")).toMutable()
        untouched.setBoolean(true, forKey: "new")
        try c.save(untouched)
        let after = try #require(try c.document(id: "stored"))
        #expect(after.toJSON() == #"{"a":"line\nbreak \"q\" \u0001 é 😀","b":0.1,"c":-1.5e+300,"# +
            #""d":[1,{"x":null},[true,false],"appended"],"e":{"inner":{"deep":7},"list":[1,2]},"f":12345678901234,"# +
            #""g":"changed","i":[],"new":true,"é":"non-ASCII key"}"#)

        // A copy of an edited copy, and a copy of a document whose values were read, agree.
        let read = try #require(try c.document(id: "stored"))
        _ = read.string(forKey: "a")
        #expect(read.toMutable().toJSON() == after.toJSON())
        #expect(untouched.toMutable().toJSON() == after.toJSON())
    }

    @Test func nestedMutableContainersAreLive() throws {
        let doc = try MutableDocument(id: "n", json: #"{"address":{"city":"Oslo"},"tags":["a"]}"#)
        doc.dictionary(forKey: "address")?.setString("Bergen", forKey: "city")
        try doc.array(forKey: "tags")?.append("b")
        let inner = MutableDictionary()
        doc.setDictionary(inner, forKey: "later")
        inner.setInt(1, forKey: "set-after")
        #expect(doc.toJSON() == #"{"address":{"city":"Bergen"},"later":{"set-after":1},"tags":["a","b"]}"#)
    }

    @Test func toMutableRemembersTheRevision() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = MutableDocument()
        #expect(UUID(uuidString: doc.id) != nil)
        try c.save(doc)
        let read = try #require(try c.document(id: doc.id))
        let edit = read.toMutable()
        #expect(edit.revisionID == read.revisionID)
        #expect(edit.id == doc.id)
    }

    /// Foundation's JSON numbers are NSNumbers, which cast to Bool and Int alike: 1 and 0 must
    /// stay numbers, and only true and false become booleans.
    @Test func foundationJSONKeepsItsTypes() throws {
        let json = #"{"one":1,"zero":0,"yes":true,"no":false,"real":1.5,"whole":2.0,"neg":-5,"list":[1,true,0]}"#
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let doc = try MutableDocument(id: "f", data: object)
        #expect(doc.toJSON() == #"{"list":[1,true,0],"neg":-5,"no":false,"one":1,"real":1.5,"whole":2,"yes":true,"zero":0}"#)
        let big = try #require(try JSONSerialization.jsonObject(with: Data(#"[18446744073709551615]"#.utf8)) as? [Any])
        #expect(throws: StoreError.self) { try MutableDocument(id: "g", data: ["big": big[0]]) }
    }

    @Test func reservedPropertiesAreRejected() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for key in ["_id", "_rev", "_deleted", "_revisions", "_anything"] {
            let doc = MutableDocument(id: "r")
            doc.setString("x", forKey: key)
            #expect(throws: StoreError.reservedProperty(key)) { try c.save(doc) }
        }
        // `_attachments` may be saved, but only as attachments: blobs by name.
        let attachments = MutableDocument(id: "r")
        attachments.setString("x", forKey: "_attachments")
        #expect(throws: StoreError.invalidValue("_attachments must be an object of blobs (the document's attachments by name)")) {
            try c.save(attachments)
        }
        // Nested underscore keys are the user's.
        let ok = try MutableDocument(id: "r", data: ["inner": ["_id": 1]])
        try c.save(ok)
        #expect(try c.count == 1)
    }

    @Test(arguments: ["", "_design/x", "_local/x", String(repeating: "x", count: 251), "tab\there"])
    func invalidDocumentIDsAreRejected(_ id: String) throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        #expect(throws: StoreError.self) { try db.defaultCollection().save(MutableDocument(id: id)) }
    }

    @Test func unsupportedValuesThrow() {
        struct Custom {}
        let doc = MutableDocument()
        #expect(throws: StoreError.self) { try doc.setValue(Custom(), forKey: "x") }
        #expect(throws: StoreError.self) { try doc.setValue(Double.nan, forKey: "x") }
        #expect(throws: StoreError.self) { try doc.setValue(UInt64.max, forKey: "x") }
        #expect(throws: StoreError.self) { try doc.setJSON("[1,2]") }
    }
}
