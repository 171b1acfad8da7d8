import Testing
@testable import SyncNodeStore

@Suite struct JSONTests {
    @Test func canonicalFormSortsKeysAndDropsWhitespace() throws {
        let value = try DocumentValue(json: #" { "b" : [1, 2.5, true, null], "a" : {"z": "x", "y": -0.0}, "é": 1 } "#)
        #expect(value.toJSON() == #"{"a":{"y":0,"z":"x"},"b":[1,2.5,true,null],"é":1}"#)
    }

    /// Keys are written in UTF-8 byte order however they compare: tied on their first eight
    /// bytes, one the start of another, holding NUL, DEL or non-ASCII bytes, and in objects
    /// small and large (the writer sorts up to 32 members inline, more with the library).
    @Test(arguments: [2, 13, 53]) func keysAreWrittenInByteOrder(count: Int) throws {
        var keys = ["abcdefgh", "abcdefgh0", "abcdefgh\u{0}", "abcdefg", "abcdefgi", "abcdefgh\u{7F}", "abcdefghé",
                    "é", "Z", "", "😀", "ﬀ", "abcdefgh😀"]
        keys += (0..<40).map { "k\($0)" }
        let chosen = Array(keys.prefix(count).reversed())
        let object = Dictionary(uniqueKeysWithValues: chosen.map { ($0, DocumentValue.int(1)) })
        let ordered = chosen.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let expected = "{" + ordered.map { key in "\"" + String(key.flatMap { $0 == "\u{0}" ? Array("\\u0000") : [$0] }) + "\":1" }.joined(separator: ",") + "}"
        #expect(JSONWriter.string(object: object) == expected)
    }

    @Test func roundTripsEscapesAndUnicode() throws {
        let text = #"{"s":"quote \" backslash \\ newline \n tab \t ctrl \u0001 emoji 😀 \ud83d\ude00"}"#
        let value = try DocumentValue(json: text)
        guard case .dictionary(let d) = value, case .string(let s)? = d["s"] else {
            Issue.record("not a string")
            return
        }
        #expect(s == "quote \" backslash \\ newline \n tab \t ctrl \u{1} emoji 😀 😀")
        #expect(try DocumentValue(json: value.toJSON()) == value)
    }

    @Test func integersAndDoublesStayApart() throws {
        let value = try DocumentValue(json: #"[1, 1.0, 1.5, -7, 1e3, 12345678901234567, 0.1]"#)
        #expect(value == .array([.int(1), .int(1), .double(1.5), .int(-7), .int(1000), .int(12345678901234567), .double(0.1)]))
    }

    @Test(arguments: [
        "", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "tru", "\"unterminated", "01", "1.", "{\"a\":1}x",
        "\"bad \\q escape\"", "\"\\ud800\"", "[\"tab\tinside\"]", "NaN", "{'a':1}",
    ])
    func rejectsMalformedInput(_ text: String) {
        #expect(throws: StoreError.self) { try DocumentValue(json: text) }
    }

    @Test func errorsNameTheBytePosition() {
        do {
            _ = try DocumentValue(json: #"{"a": [1, 2, x]}"#)
            Issue.record("expected an error")
        } catch let error as StoreError {
            #expect(error.description.contains("at byte 13"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func deepNestingIsRejectedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: StoreError.self) { try DocumentValue(json: deep) }
        let ok = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: Never.self) { try DocumentValue(json: ok) }
    }

    @Test func skimmerFindsValuesAtAPathAsText() throws {
        let answer = #"""
            { "results" : [
                {"id": "a", "docs": [{"ok": {"_id":"a","t":"q\"}{","n":[1,{"ok":2}]}}, {"error": {"id":"a"}}]},
                {"docs": {"ok": "not an array"}},
                {"id": "b", "docs": [ {"ok" :  {"_id":"b"} } ], "ok": "not here"},
                {"id": "c", "docs": []}
            ], "ok": 1 }
            """#
        let path: [JSONSkimmer.Step] = [.member("results"), .each, .member("docs"), .each, .member("ok")]
        let found = try JSONSkimmer.values(at: path, in: answer)
        #expect(found == [#"{"_id":"a","t":"q\"}{","n":[1,{"ok":2}]}"#, #"{"_id":"b"}"#])
        #expect(try found.map { try DocumentValue(json: $0) }.count == 2)
        #expect(try JSONSkimmer.values(at: [.each], in: "[1, -2.5e3, true, null, \"x\"]") == ["1", "-2.5e3", "true", "null", #""x""#])
        #expect(try JSONSkimmer.values(at: [.member("missing")], in: #"{"a":1}"#).isEmpty)
        #expect(try JSONSkimmer.values(at: [.member("a")], in: #"{"b":"\u00e9\n\"\\","a":"\uD83D\uDE00"}"#) == [#""\uD83D\uDE00""#])
        // Malformed input anywhere is an error, also outside the path.
        for bad in [#"{"results":[{"docs":[{"ok":{"a":}}]}]}"#, #"{"x":[1,2}"#, #"{"results":[]"#, #"{"a":"\#u{01}"}"#, "[1] 2",
                    #"{"x":"\q"}"#, #"{"x":"\u12"}"#, #"{"x":"\u12g4"}"#, #"{"x":"ab\"#] {
            #expect(throws: StoreError.self, "\(bad)") { try JSONSkimmer.values(at: path, in: bad) }
        }
    }

    @Test func projectionKeepsWhatLookupsReadAsItStands() throws {
        func project(_ paths: [[String]], _ text: String) throws -> String {
            var text = text
            return try text.withUTF8 { String(decoding: try JSONProjection(paths: paths).project($0), as: UTF8.self) }
        }
        let doc = #"{"big":"xxxx","n": 1.50,"a":{"b":[1,2],"c":{"d":true},"e":"no"},"tags":["x",{"y":1}],"n":2}"#
        // Values byte for byte (1.50 stays 1.50), members in document order, a repeated name every time.
        #expect(try project([["n"]], doc) == #"{"n":1.50,"n":2}"#)
        #expect(try project([["a", "c", "d"], ["tags"]], doc) == #"{"a":{"c":{"d":true}},"tags":["x",{"y":1}]}"#)
        // A shorter path keeps the whole value, whichever comes first.
        #expect(try project([["a", "c"], ["a"]], doc) == #"{"a":{"b":[1,2],"c":{"d":true},"e":"no"}}"#)
        // A path on into a value that is no object finds nothing: `null` stands in its place, so that the
        // first of two members of one name is still the first.
        #expect(try project([["tags", "y"], ["a", "e", "f"]], doc) == #"{"a":{"e":null},"tags":null}"#)
        #expect(try project([["missing"]], doc) == "{}")
        #expect(try project([[]], doc) == doc)
        #expect(try project([["x"]], "[1,2]") == "[1,2]")
        // Escaped names are kept as written when they mean the name.
        #expect(try project([["é"]], #"{"é":1,"e":2}"#) == #"{"é":1}"#)
        for bad in [#"{"n":}"#, #"{"n":1"#, #"{"n" 1}"#, #"{"a":{"b":[}}"#] {
            #expect(throws: StoreError.self, "\(bad)") { try project([["n"], ["a", "b"]], bad) }
        }
    }
}
