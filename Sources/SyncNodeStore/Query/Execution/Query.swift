import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// A SELECT query over a database's collections, from SQL++ text
/// (``Database/createQuery(_:)``) or from the ``QueryBuilder``.
///
/// It compiles to one SQLite statement on first use; SQLite's statement
/// cache then reuses the prepared statement. A `Query` is `Sendable`;
/// ``execute()`` may run from any thread.
public final class Query: Sendable, CustomStringConvertible {
    /// The database the query reads.
    public let database: Database
    let statement: SelectStatement
    private let state = Mutex(State())
    let live = LiveQueryHub()

    private struct State {
        var compiled: CompiledQuery?
        /// The database's schema generation `compiled` was made at.
        var generation = 0
        var parameters: Parameters?
    }

    init(database: Database, statement: SelectStatement) {
        self.database = database
        self.statement = statement
    }

    /// Values for `$name` parameters. Setting them re-runs live queries.
    public var parameters: Parameters? {
        get { state.withLock { $0.parameters } }
        set {
            state.withLock { $0.parameters = newValue }
            live.parametersChanged()
        }
    }

    /// The query as SQL++ text.
    public var description: String { SQLPPRenderer.render(statement) }

    /// The collections the query reads: its FROM collection, then each joined one. A caller that
    /// lets others query only some collections checks these before running it.
    /// - Throws: ``StoreError/invalidQuery(_:)`` for a source that names no collection;
    ///   ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``.
    public func collections() throws -> [DocumentCollection] {
        try ([statement.from] + statement.joins.map(\.source)).map { try QueryCompiler.resolve($0.collection, database: database) }
    }

    /// Runs the query and returns every row.
    ///
    /// The query compiles on first run (and again after a collection or index is created or deleted);
    /// unset parameters are MISSING.
    /// - Throws: ``StoreError/invalidQuery(_:)`` for a query that cannot compile or run (an unknown
    ///   collection or source, a misplaced `MATCH`, a bad full-text pattern or regular expression, a
    ///   query too complex to compile...); ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)``
    ///   when SQLite fails.
    public func execute() throws -> ResultSet {
        var rows: [[DocumentValue?]] = []
        let layout = try forEachResult { rows.append($0.values) }
        return ResultSet(layout: layout, rows: rows)
    }

    /// Runs the query and hands each row to `body` as it is read, in one snapshot, without
    /// keeping them: a result larger than memory can be written out. Returns the rows' layout.
    /// - Throws: as ``execute()``, and what `body` throws (which ends the query).
    @discardableResult
    package func forEachResult(_ body: (Result) throws -> Void) throws -> ResultLayout {
        let blobStore = database.blobStore
        return try forEachRow { compiled, handle in
            try body(Result(layout: compiled.layout, values: try Self.values(handle, compiled, blobStore: blobStore)))
        }
    }

    /// Runs the query in one snapshot (one statement), calling `row` with the statement at each row.
    func forEachRow(_ row: (CompiledQuery, OpaquePointer) throws -> Void) throws -> ResultLayout {
        let parameters = state.withLock { $0.parameters } ?? Parameters()
        // One statement reads one snapshot: no transaction needed around it.
        return try database.readStatement { db in
            do {
                return try Self.step(try compiledQuery(db), parameters: parameters, db: db, row)
            } catch let failure as PrepareFailure {
                // The schema may have changed since compiling (another process deleted or made a
                // collection or full-text index): compile against the current one and try once more.
                // No row was read yet: preparing comes before the first.
                state.withLock { $0.compiled = nil }
                do {
                    return try Self.step(try compiledQuery(db), parameters: parameters, db: db, row)
                } catch let again as PrepareFailure {
                    throw StoreError.invalidQuery("cannot prepare the query: \(again.message ?? failure.message ?? "unknown error")")
                }
            }
        }
    }

    /// SQLite's plan for the query (`EXPLAIN QUERY PLAN`), one step per line,
    /// after the SQL it runs.
    /// - Throws: ``StoreError/invalidQuery(_:)`` when the query does not compile;
    ///   ``StoreError/databaseClosed(_:)``; ``StoreError/storage(_:)`` when SQLite cannot prepare it.
    public func explain() throws -> String {
        try database.read { db in
            let compiled = try compiledQuery(db)
            let statement = try db.makeStatement(sql: "EXPLAIN QUERY PLAN " + compiled.sql)
            let handle = statement.sqliteStatement
            var steps: [String] = []
            while sqlite3_step(handle) == SQLITE_ROW { steps.append(Self.text(handle, 3)) }
            return compiled.sql + "\n" + steps.joined(separator: "\n")
        }
    }

    func compiledQuery(_ db: GRDB.Database) throws(StoreError) -> CompiledQuery {
        let generation = database.schemaGeneration
        if let compiled = state.withLock({ $0.generation == generation ? $0.compiled : nil }) { return compiled }
        let compiled = try QueryCompiler.compile(statement, database: database, db: db)
        state.withLock { s in
            s.compiled = compiled
            s.generation = generation
        }
        return compiled
    }

    /// The collections the query reads.
    func collectionIDs() throws -> Set<Int64> {
        try database.read { db in try compiledQuery(db).collectionIDs }
    }

    /// Binds by number: the compiled SQL may not use every value or tag
    /// (`$p IS NULL` needs only the tag), so GRDB's argument count check does not fit.
    private static func bind(_ compiled: CompiledQuery, _ parameters: Parameters, to handle: OpaquePointer) {
        sqlite3_clear_bindings(handle)
        let count = sqlite3_bind_parameter_count(handle)
        func bind(_ index: Int, _ value: (any DatabaseValueConvertible)?) {
            let i = Int32(index)
            guard i <= count else { return }
            switch value?.databaseValue.storage {
            case .int64(let v)?: sqlite3_bind_int64(handle, i, v)
            case .double(let v)?: sqlite3_bind_double(handle, i, v)
            case .string(let v)?: SQLiteStatement(handle).bind(i, v)  // by byte count: a NUL inside must not end the string
            default: sqlite3_bind_null(handle, i)
            }
        }
        for (name, number) in compiled.parameterNumbers {
            let (value, tag) = bound(parameters.value(forName: name))
            bind(number, value)
            bind(number + 1, tag)
        }
    }

    /// A parameter as SQL value and tag (see ``SQLValue``).
    private static func bound(_ value: DocumentValue?) -> ((any DatabaseValueConvertible)?, String?) {
        switch value {
        case nil: return (nil, nil)
        case .null?: return (nil, "null")
        case .bool(let b)?: return (b ? 1 : 0, b ? "true" : "false")
        case .int(let i)?: return (i, "integer")
        case .double(let d)?: return (d, "real")
        case .string(let s)?: return (s, "text")
        case .array?: return (value!.toJSON(), "array")
        case .dictionary?, .blob?: return (value!.toJSON(), "object")
        }
    }

    /// SQLite could not prepare the compiled statement.
    struct PrepareFailure: Error {
        let message: String?
    }

    private static func step(
        _ compiled: CompiledQuery, parameters: Parameters, db: GRDB.Database, _ row: (CompiledQuery, OpaquePointer) throws -> Void
    ) throws -> ResultLayout {
        let statement: Statement
        do {
            statement = try db.cachedStatement(sql: compiled.sql)
        } catch let error as DatabaseError {
            throw PrepareFailure(message: error.message ?? "\(error)")
        }
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        bind(compiled, parameters, to: handle)
        while true {
            let status = sqlite3_step(handle)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else {
                let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
                // Errors thrown by our SQL functions arrive as their description already.
                throw StoreError.invalidQuery(message.hasPrefix("invalid query: ") ? String(message.dropFirst(15)) : "the query failed: \(message)")
            }
            try row(compiled, handle)
        }
        return compiled.layout
    }

    /// The row at `handle`: the result columns, then `(id, rev)` of each source when known.
    private static func values(_ handle: OpaquePointer, _ compiled: CompiledQuery, blobStore: BlobStore) throws -> [DocumentValue?] {
        let width = compiled.layout.columnNames.count
        let originColumns = Int32(width * 2)..<Int32(width * 2 + compiled.layout.originCount * 2)
        var row: [DocumentValue?] = []
        row.reserveCapacity(width + originColumns.count)
        for i in 0..<Int32(width) {
            row.append(try value(handle, column: i * 2, blobStore: blobStore))
        }
        for i in originColumns {
            row.append(sqlite3_column_type(handle, i) == SQLITE_NULL ? nil : .string(text(handle, i)))
        }
        return row
    }

    private static func text(_ handle: OpaquePointer, _ column: Int32) -> String { SQLiteStatement(handle).text(column) }

    /// Reads the value/tag column pair at `column`.
    static func value(_ handle: OpaquePointer, column: Int32, blobStore: BlobStore) throws -> DocumentValue? {
        guard sqlite3_column_type(handle, column + 1) != SQLITE_NULL else { return nil }
        guard let tagBytes = sqlite3_column_text(handle, column + 1) else { return nil }
        switch tagBytes[0] {
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "t") where tagBytes[1] == UInt8(ascii: "r"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "t"): return .string(text(handle, column))
        case UInt8(ascii: "i"), UInt8(ascii: "r"):
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .int(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: return (try? DocumentValue.number(sqlite3_column_double(handle, column))) ?? .null
            case SQLITE_NULL: return .null
            default: return .string(text(handle, column))
            }
        default:
            // array / object: JSON text.
            return try JSONParser.parse(text(handle, column), blobStore: blobStore)
        }
    }

    // MARK: - Builder stages

    private func with(_ change: (inout SelectStatement) -> Void) -> Query {
        var statement = self.statement
        change(&statement)
        return Query(database: database, statement: statement)
    }

    /// Adds joins.
    public func join(_ joins: Join...) -> Query { with { $0.joins += joins.map(\.spec) } }
    /// Sets the WHERE condition.
    public func `where`(_ condition: Expression) -> Query { with { $0.whereClause = condition.tree } }
    /// Groups rows by expressions.
    public func groupBy(_ expressions: Expression...) -> Query { with { $0.groupBy = expressions.map(\.tree) } }
    /// Filters groups.
    public func having(_ condition: Expression) -> Query { with { $0.having = condition.tree } }
    /// Orders the rows.
    public func orderBy(_ orderings: Ordering...) -> Query { with { $0.orderBy = orderings.map(\.item) } }
    /// Limits the number of rows, optionally skipping the first `offset`.
    public func limit(_ limit: Expression, offset: Expression? = nil) -> Query {
        with {
            $0.limit = limit.tree
            $0.offset = offset?.tree
        }
    }
}

extension Database {
    /// Parses a SQL++ `SELECT` query. In FROM, `_`, `_default` and the
    /// database's name mean the default collection; `name` is a collection
    /// of the default scope, `scope.name` one of another scope.
    ///
    /// Collection names are resolved when the query first runs, not here.
    /// - Throws: ``StoreError/invalidQuery(_:)`` naming the position of a
    ///   syntax error and what was expected there, or an unknown function or wrong argument count;
    ///   ``StoreError/databaseClosed(_:)`` when the database is closed.
    public func createQuery(_ sql: String) throws -> Query {
        try checkOpen()
        return Query(database: self, statement: try SQLPPParser.parseStatement(sql))
    }
}
