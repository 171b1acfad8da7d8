import GRDB
import GRDBSQLite

/// `sn_project(body, paths)`: a big document body cut down to what a query reads
/// (``JSONProjection``), for a query that scans a collection; a small one as it is.
///
/// It is registered through SQLite's C API rather than GRDB's, so that the body is read in
/// place: a `String` of it would cost another copy of each big document.
enum ProjectFunction {
    static let name = "sn_project"

    /// SQL that stands for `body` in the lookups of `projection`'s paths.
    static func sql(body: String, projection: JSONProjection) -> String {
        let paths = DocumentValue.array(projection.paths.map { .array($0.map(DocumentValue.string)) })
        return "\(name)(\(body), \(SQLValue.quote(paths.toJSON())))"
    }

    static func register(_ db: GRDB.Database) {
        sqlite3_create_function_v2(
            db.sqliteConnection, name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, _, arguments in
                guard let context, let arguments, let body = arguments[0], let paths = arguments[1] else { return }
                guard sqlite3_value_type(body) == SQLITE_TEXT, sqlite3_value_bytes(body) >= JSONProjection.minimumSize,
                      let projection = ProjectFunction.projection(paths),
                      // The bytes where they are: no copy, no terminating NUL (which could cost one).
                      let start = sqlite3_value_blob(body), case let count = Int(sqlite3_value_bytes(body)),
                      let projected = try? projection.project(UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: count))
                else {
                    // Small, or not JSON the projection understands: SQLite reads it whole, as it would have.
                    sqlite3_result_value(context, body)
                    return
                }
                projected.withUnsafeBufferPointer { bytes in
                    sqlite3_result_text(context, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                                        Int32(bytes.count), ProjectFunction.transient)
                }
            }, nil, nil, nil)
    }

    /// The projection the paths argument spells (read for big bodies only, where it costs
    /// nothing beside the body's own scan).
    fileprivate static func projection(_ argument: OpaquePointer) -> JSONProjection? {
        guard let text = sqlite3_value_text(argument),
              case .array(let list)? = try? JSONParser.parse(String(cString: text)) else { return nil }
        var paths: [[String]] = []
        for item in list {
            guard case .array(let names) = item else { return nil }
            paths.append(names.compactMap { if case .string(let name) = $0 { name } else { nil } })
        }
        return JSONProjection(paths: paths)
    }

    fileprivate static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
