import Foundation
import GRDBSQLite
import Synchronization

/// Read-only SQLite connections for single-statement point lookups
/// (`document(id:)`), used on the caller's thread.
///
/// Why not GRDB here: every GRDB read access hops onto a connection's
/// dispatch queue and first runs `PRAGMA schema_version`, about 5.7 µs per
/// call measured on this machine kind, twice the cost of the lookup itself.
/// A lookup is one statement, so it needs neither the hop nor a transaction.
/// Everything else goes through GRDB.
final class PointReader: Sendable {
    private let path: String
    /// The database's name, for errors.
    private let databaseName: String
    private let state = Mutex<(idle: [Connection], closed: Bool)>(([], false))
    /// Connections kept idle; more may exist briefly under heavy concurrency.
    private let maxIdle = 8

    init(path: String, databaseName: String) { (self.path, self.databaseName) = (path, databaseName) }

    /// Runs `body` with the prepared statement for `sql` on an idle connection.
    func withStatement<T>(_ sql: String, _ body: (SQLiteStatement) throws -> T) throws -> T {
        guard let connection = try checkOut() else { throw StoreError.databaseClosed(databaseName) }
        defer { checkIn(connection) }
        let statement = try connection.statement(sql)
        defer { statement.reset() }
        return try body(statement)
    }

    func close() {
        let idle = state.withLock { s in
            defer { s.idle = []; s.closed = true }
            return s.idle
        }
        for connection in idle { connection.close() }
    }

    private func checkOut() throws -> Connection? {
        let reused = state.withLock { s -> (Connection?, Bool) in (s.closed ? nil : s.idle.popLast(), s.closed) }
        if reused.1 { return nil }
        return try reused.0 ?? Connection(path: path)
    }

    private func checkIn(_ connection: Connection) {
        let keep = state.withLock { s -> Bool in
            guard !s.closed, s.idle.count < maxIdle else { return false }
            s.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    /// One connection and its prepared statements. Used by one thread at a
    /// time (it is checked out of the idle list), hence `@unchecked Sendable`.
    final class Connection: @unchecked Sendable {
        private var handle: OpaquePointer?
        private var statements: [String: SQLiteStatement] = [:]

        init(path: String) throws {
            let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
                let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
                let code = handle.map { sqlite3_extended_errcode($0) } ?? SQLITE_NOMEM
                sqlite3_close(handle)
                throw StoreError.sqlite(code: code, message: "opening \(path) for reading: \(message)")
            }
            sqlite3_busy_timeout(handle, Int32(Database.busyTimeout * 1000))
        }

        func statement(_ sql: String) throws -> SQLiteStatement {
            if let cached = statements[sql] { return cached }
            var raw: OpaquePointer?
            guard let handle else { throw StoreError.sqlite(code: SQLITE_MISUSE, message: "preparing \(sql): the connection is closed") }
            guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil) == SQLITE_OK, let raw else {
                throw StoreError.sqlite(code: sqlite3_extended_errcode(handle), message: "preparing \(sql): \(String(cString: sqlite3_errmsg(handle)))")
            }
            let statement = SQLiteStatement(raw)
            statements[sql] = statement
            return statement
        }

        func close() {
            for statement in statements.values { sqlite3_finalize(statement.handle) }
            statements = [:]
            sqlite3_close_v2(handle)
            handle = nil
        }
    }
}

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
