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
