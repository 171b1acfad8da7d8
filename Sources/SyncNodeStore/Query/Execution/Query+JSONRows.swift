import GRDBSQLite

extension Query {
    /// Runs the query and writes its rows as JSON objects joined by commas, as they are read,
    /// in pieces handed to `write`: what an HTTP answer sends as its `results`.
    ///
    /// An object or array column (a whole document above all) goes as the JSON text SQLite
    /// holds, not parsed and written again: a row of a 50 MB document costs that text once.
    /// Its keys are not sorted as ``Result/toJSON()`` sorts them (the last selected comes
    /// first); a name selected twice keeps its last value that is not MISSING, and MISSING
    /// columns are left out, as there.
    /// - Throws: as ``execute()``, and what `write` throws (which ends the query).
    package func writeRowsJSON(_ write: (UnsafeRawBufferPointer) throws -> Void) throws {
        var json = JSONWriter(capacity: 4096)
        var rows = 0
        var shared: Bool?
        _ = try forEachRow { compiled, handle in
            let names = compiled.layout.columnNames
            // A name selected twice takes its last value present in this row: the columns are
            // looked at from the last, and a name written is not written again.
            let sharing = shared ?? (Set(names).count < names.count)
            shared = sharing
            var written = Set<String>()
            if rows > 0 { json.writeRaw(",") }
            json.writeRaw("{")
            rows += 1
            var first = true
            for (index, name) in names.enumerated().reversed() {
                let column = Int32(index * 2), tagColumn = Int32(index * 2 + 1)
                guard sqlite3_column_type(handle, tagColumn) != SQLITE_NULL, let tag = sqlite3_column_text(handle, tagColumn) else { continue }
                if sharing, !written.insert(name).inserted { continue }
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
}
