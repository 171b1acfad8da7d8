/// A compiled expression: SQL for its value and SQL for its type tag.
///
/// SQLite has one NULL where the query language has MISSING and null, and no
/// booleans; so every value travels as a pair:
/// - `sql`: the native value: numbers and text as themselves, booleans as
///   0/1, arrays and objects as JSON text, and NULL for MISSING and null;
/// - `tag`: NULL for MISSING, `'null'` for null, otherwise one of SQLite's
///   `json_type` words (`'true' 'false' 'integer' 'real' 'text' 'array' 'object'`).
///
/// Properties keep the plain `json_extract(body, path)` as their value so that
/// value indexes (built on the same expression) serve them; the tag is only
/// evaluated where a clause needs it. `kind` records what is known at compile
/// time, which lets the compiler leave most type checks out.
struct SQLValue {
    enum Kind: Equatable {
        case boolean, number, string
        /// Any type, decided per row by `tag`.
        case dynamic
    }

    var sql: String
    var tag: String
    var kind: Kind
    var canBeMissing: Bool
    var canBeNull: Bool
    /// Where a JSON value lives, when it is part of a larger JSON text
    /// (`json_extract(json, path)`): lets ANY/EVERY iterate it in place.
    var location: (json: String, path: String)?
    /// Set for compile-time constants.
    var constant: DocumentValue?

    static func literal(_ value: DocumentValue) -> SQLValue {
        switch value {
        case .null: return SQLValue(sql: "NULL", tag: "'null'", kind: .dynamic, canBeMissing: false, canBeNull: true, constant: value)
        case .bool(let b): return SQLValue(sql: b ? "1" : "0", tag: b ? "'true'" : "'false'", kind: .boolean, canBeMissing: false, canBeNull: false, constant: value)
        case .int(let i): return SQLValue(sql: i < 0 ? "(\(i))" : "\(i)", tag: "'integer'", kind: .number, canBeMissing: false, canBeNull: false, constant: value)
        case .double(let d):
            var text = "\(d)"
            if !text.contains(".") && !text.contains("e") { text += ".0" }
            return SQLValue(sql: d < 0 ? "(\(text))" : text, tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false, constant: value)
        case .string(let s): return SQLValue(sql: quote(s), tag: "'text'", kind: .string, canBeMissing: false, canBeNull: false, constant: value)
        case .array, .dictionary, .blob:
            let json = value.toJSON()
            let tag = json.hasPrefix("[") ? "'array'" : "'object'"
            return SQLValue(sql: quote(json), tag: tag, kind: .dynamic, canBeMissing: false, canBeNull: false, location: (quote(json), "'$'"), constant: value)
        }
    }

    static let missing = SQLValue(sql: "NULL", tag: "NULL", kind: .dynamic, canBeMissing: true, canBeNull: false, constant: nil)

    /// A JSON value inside a JSON text: `json_extract` / `json_type` at `path`.
    static func json(_ json: String, path: String, canBeMissing: Bool = true) -> SQLValue {
        SQLValue(sql: "json_extract(\(json), \(path))", tag: "json_type(\(json), \(path))", kind: .dynamic,
                 canBeMissing: canBeMissing, canBeNull: true, location: (json, path))
    }

    /// A value computed from `arguments` with the usual rule: MISSING when an
    /// argument is MISSING, else null when `sql` is NULL (a null or mistyped
    /// argument), else of `kind`.
    static func computed(_ sql: String, kind: Kind, from arguments: [SQLValue], canBeNull: Bool = true) -> SQLValue {
        let missing = arguments.filter(\.canBeMissing)
        var tag = kind.validTag(sql)
        if canBeNull { tag = "CASE WHEN \(sql) IS NULL THEN 'null' ELSE \(tag) END" }
        if !missing.isEmpty {
            tag = "CASE WHEN \(missing.map { "\($0.tag) IS NULL" }.joined(separator: " OR ")) THEN NULL ELSE \(tag) END"
        }
        return SQLValue(sql: sql, tag: tag, kind: kind, canBeMissing: !missing.isEmpty, canBeNull: canBeNull)
    }

    // MARK: - Views of the value as one type (NULL when it is not of that type)

    var asNumber: String {
        switch kind {
        case .number: return sql
        case .dynamic: return "(CASE WHEN \(tag) IN ('integer', 'real') THEN \(sql) END)"
        case .boolean, .string: return nullReferencingValue
        }
    }

    var asString: String {
        switch kind {
        case .string: return sql
        case .dynamic: return "(CASE WHEN \(tag) = 'text' THEN \(sql) END)"
        case .boolean, .number: return nullReferencingValue
        }
    }

    /// NULL, written so the value stays in the SQL: an aggregate inside must
    /// still make the query an aggregate query.
    private var nullReferencingValue: String { "(CASE WHEN \(sql) IS NULL THEN NULL END)" }

    /// Truthiness: false, 0 are false; null and MISSING are NULL; anything else is true.
    var asBoolean: String {
        switch kind {
        case .boolean: return sql
        case .number: return "(\(sql) != 0)"
        case .string: return "(CASE WHEN \(sql) IS NULL THEN NULL ELSE 1 END)"
        case .dynamic:
            return "(CASE \(tag) WHEN 'true' THEN 1 WHEN 'false' THEN 0 WHEN 'integer' THEN \(sql) != 0 WHEN 'real' THEN \(sql) != 0 WHEN 'null' THEN NULL WHEN 'text' THEN 1 WHEN 'array' THEN 1 WHEN 'object' THEN 1 END)"
        }
    }

    /// The type class (`'n'` number, `'b'` boolean, else the tag; NULL for null and MISSING).
    var typeClass: String {
        switch kind {
        case .number: return "'n'"
        case .boolean: return "'b'"
        case .string: return "'text'"
        case .dynamic:
            return "(CASE \(tag) WHEN 'integer' THEN 'n' WHEN 'real' THEN 'n' WHEN 'true' THEN 'b' WHEN 'false' THEN 'b' WHEN 'null' THEN NULL ELSE \(tag) END)"
        }
    }

    /// The rank of the value's type in the collation order
    /// (MISSING, null, booleans, numbers, strings, arrays, objects), or nil
    /// when it cannot vary.
    var typeRank: String? {
        switch kind {
        case .dynamic:
            return "(CASE \(tag) WHEN 'null' THEN 1 WHEN 'false' THEN 2 WHEN 'true' THEN 2 WHEN 'integer' THEN 4 WHEN 'real' THEN 4 WHEN 'text' THEN 5 WHEN 'array' THEN 6 WHEN 'object' THEN 7 ELSE 0 END)"
        default:
            // A NULL value sorts first already; only MISSING-before-null needs a key.
            return canBeMissing && canBeNull ? "(\(tag) IS NOT NULL)" : nil
        }
    }

    static func quote(_ text: String) -> String {
        let literal = "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        // SQLite's tokenizer ends a statement's text at a NUL byte: spell one as char(0).
        guard text.utf8.contains(0) else { return literal }
        return "(" + literal.replacingOccurrences(of: "\u{0}", with: "' || char(0) || '") + ")"
    }
}

extension SQLValue.Kind {
    /// The tag of a valued (non-null) value of this kind.
    func validTag(_ sql: String) -> String {
        switch self {
        case .boolean: return "(CASE WHEN \(sql) THEN 'true' ELSE 'false' END)"
        // One tag for integers and reals, so DISTINCT and GROUP BY take 5 and 5.0 as one value.
        case .number: return "'real'"
        case .string: return "'text'"
        case .dynamic: return "'null'"
        }
    }
}
