import Foundation
import GRDB
import GRDBSQLite

/// Binding and reading helpers over a raw prepared statement (also used on
/// GRDB statements' `sqliteStatement` in the write path's hot spots).
struct SQLiteStatement {
    let handle: OpaquePointer
    /// The object that owns the handle (a GRDB statement), kept alive while
    /// this is in use: GRDB may drop a cached statement when the schema changes.
    private let owner: AnyObject?

    init(_ handle: OpaquePointer, owner: AnyObject? = nil) {
        self.handle = handle
        self.owner = owner
    }

    /// `sql` prepared once per connection (GRDB's statement cache), for binding and stepping
    /// directly: on paths that run per document or per write, GRDB's argument arrays (measured
    /// with callgrind) and its parsing of uncached SQL (perf) cost more than the statement does.
    static func cached(_ db: GRDB.Database, _ sql: String) throws -> SQLiteStatement {
        let statement = try db.cachedStatement(sql: sql)
        return SQLiteStatement(statement.sqliteStatement, owner: statement)
    }

    /// SQLITE_TRANSIENT: SQLite copies the bytes before the bind call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bind(index, utf8: $0) }
    }

    /// Binds UTF-8 bytes as text (canonical JSON bodies: made valid, so not checked again).
    func bind(_ index: Int32, utf8 bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { bind(index, utf8: $0) }
    }

    private func bind(_ index: Int32, utf8 buffer: UnsafeBufferPointer<UInt8>) {
        buffer.withMemoryRebound(to: CChar.self) { chars in
            if let base = chars.baseAddress, !chars.isEmpty {
                _ = sqlite3_bind_text(handle, index, base, Int32(chars.count), Self.transient)
            } else {
                // A nil pointer would bind NULL, not the empty string.
                _ = sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
        }
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }

    /// Steps once with the text `bytes` bound at `index` where they lie (SQLITE_STATIC: no copy,
    /// which a body's kilobyte costs on every write), then resets the statement, which unbinds
    /// them: they need only outlive this call.
    func stepOnce(bindingInPlace bytes: UnsafeBufferPointer<UInt8>, at index: Int32) throws {
        defer { reset() }
        if let base = bytes.baseAddress, !bytes.isEmpty {
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                _ = sqlite3_bind_text(handle, index, chars, Int32(bytes.count), nil)
            }
        } else {
            bind(index, "")
        }
        _ = try step()
    }

    /// Steps once: true when a row is available.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let db = sqlite3_db_handle(handle)
            throw StoreError.sqlite(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)))
        }
    }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// A blob column's bytes, handed to `body` where SQLite keeps them (empty for NULL).
    func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        // The pointer first, then its size, as SQLite's documentation orders them.
        let start = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return body(UnsafeRawBufferPointer(start: start, count: count))
    }

    /// Steps once with the blob `bytes` bound at `index` where they lie, as the text one above
    /// (no bytes bind NULL).
    func stepOnce(bindingInPlace bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        defer { reset() }
        _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), nil)
        _ = try step()
    }

    /// Binds `bytes` as a blob, copied by SQLite before the call returns.
    func bind(_ index: Int32, blob bytes: UnsafeRawBufferPointer) {
        _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
    }

    func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }

    /// Whether a text column holds `byte`, looked for in SQLite's own bytes (no String made).
    func contains(_ byte: UInt8, inColumn column: Int32) -> Bool {
        guard let bytes = sqlite3_column_text(handle, column) else { return false }
        return memchr(bytes, Int32(byte), Int(sqlite3_column_bytes(handle, column))) != nil
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}
