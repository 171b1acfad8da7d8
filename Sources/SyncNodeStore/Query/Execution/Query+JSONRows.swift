import GRDBSQLite

extension Query {
    /// Runs the query and writes its rows as JSON objects joined by commas, as they are read,
    /// in pieces handed to `write`: what an HTTP answer sends as its `results`.
    ///
    /// An object or array column (a whole document above all) goes as the JSON text SQLite
    /// holds, not parsed and written again: a row of a 50 MB document costs that text once.
    /// Its keys come in SELECT order, not sorted as ``Result/toJSON()`` sorts them; a name
    /// selected twice keeps its last value, and MISSING columns are left out, as there.
    /// - Throws: as ``execute()``, and what `write` throws (which ends the query).
    package func writeRowsJSON(_ write: (UnsafeRawBufferPointer) throws -> Void) throws {
        var json = JSONWriter(capacity: 4096)
        var kept: [(name: String, column: Int32)]?
        var rows = 0
        _ = try forEachRow { compiled, handle in
            let columns = kept ?? Self.lastOfEachName(compiled.layout.columnNames)
            kept = columns
            if rows > 0 { json.writeRaw(",") }
            json.writeRaw("{")
            rows += 1
            var first = true
            for (name, column) in columns {
                let tagColumn = column + 1
                guard sqlite3_column_type(handle, tagColumn) != SQLITE_NULL, let tag = sqlite3_column_text(handle, tagColumn) else { continue }
                if !first { json.writeRaw(",") }
                first = false
                json.writeString(name)
                json.writeRaw(":")
                if tag[0] == UInt8(ascii: "a") || tag[0] == UInt8(ascii: "o"), let text = sqlite3_column_text(handle, column) {
                    try json.bytes.withUnsafeBytes(write)
                    json.bytes.removeAll(keepingCapacity: true)
                    try write(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))))
                } else {
                    json.write(try Self.value(handle, column: column, blobStore: database.blobStore) ?? .null)
                }
            }
            json.writeRaw("}")
            try json.bytes.withUnsafeBytes(write)
            json.bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Each result column's name and value column, the last of those sharing a name only.
    private static func lastOfEachName(_ names: [String]) -> [(name: String, column: Int32)] {
        var seen = Set<String>()
        var kept: [(name: String, column: Int32)] = []
        for (i, name) in names.enumerated().reversed() where seen.insert(name).inserted {
            kept.append((name, Int32(i * 2)))
        }
        return kept.reversed()
    }
}
