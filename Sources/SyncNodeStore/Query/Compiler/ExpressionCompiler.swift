/// Compiles ``QueryExpression`` trees to ``SQLValue``s for one statement (or
/// one index definition). The semantics it implements are documented in the
/// SyncNodeStore tour's "Queries" (`Tour.md`); the differential test checks them against a
/// reference evaluator.
struct ExpressionCompiler {
    struct Source {
        /// The name the query uses (its alias, else the collection name).
        let name: String
        /// The SQL alias of the docs table (`s0`, `s1`...), empty for an index definition.
        let sqlAlias: String
        let collection: DocumentCollection
        /// True for the right side of a LEFT OUTER JOIN: its columns may all be NULL.
        let isOuter: Bool

        func column(_ name: String) -> String { sqlAlias.isEmpty ? name : "\(sqlAlias).\(name)" }
    }

    struct Variable {
        let name: String
        let value: SQLValue
    }

    var sources: [Source]
    /// Parameter name -> SQL parameter number (the value is bound at `?n`, its tag at `?n+1`).
    private(set) var parameters: [String: Int] = [:]
    /// Full-text index name -> SQL alias of its joined FTS table, filled while compiling MATCHes.
    var fullText: [String: String] = [:]
    var variables: [Variable] = []
    var nextEach = 0
    /// The member paths looked up in the first source's bodies so far (their leading keys:
    /// a path on past an array index reads that whole value); nil once one reads a body from
    /// an index on, so that only the whole body will do.
    private(set) var firstSourcePaths: [[String]]? = []
    /// True once an expression reads the first source's whole body.
    private(set) var readsFirstSourceWhole = false
    /// What stands for the first source's body in its lookups: the column, or its projection.
    var firstSourceBody: String?

    init(sources: [Source]) {
        self.sources = sources
    }

    // MARK: - Expressions

    /// Value SQL above this size means a pathological query (nested CASEs and
    /// IN lists copy their operands several times, so a few hundred bytes of
    /// SQL++ can ask for gigabytes); it is refused, checked at every node and
    /// before a node copies an operand many times, so no more than a few times
    /// this much is ever built.
    static let maximumSQLSize = 16 << 20

    mutating func compile(_ e: QueryExpression) throws(StoreError) -> SQLValue {
        let value = try node(e)
        try Self.checkSize(value.sql.utf8.count)
        return value
    }

    /// Before a node copies an operand `copies` times, type tag included (nested,
    /// tags are what grows fastest). A chain of AND/OR terms counts their tags at a
    /// quarter: long ones build large tags that no clause uses (a 20,000-item IN
    /// list of 0/1/TRUE has one of ~60 MB).
    static func checkSize(of value: SQLValue, copies: Int) throws(StoreError) {
        let (size, overflow) = (value.sql.utf8.count + value.tag.utf8.count).multipliedReportingOverflow(by: copies)
        try checkSize(overflow ? .max : size)
    }

    static func checkSize(_ size: Int) throws(StoreError) {
        guard size <= maximumSQLSize else {
            throw .invalidQuery("the query is too complex: it compiles to more than \(maximumSQLSize >> 20) MB of SQL")
        }
    }

    mutating func node(_ e: QueryExpression) throws(StoreError) -> SQLValue {
        switch e {
        case .literal(let v): return .literal(v)
        case .missing: return .missing
        case .property(let source, let path): return try property(source: source, path: path)
        case .meta(let source, let property): return try meta(source: source, property)
        case .parameter(let name): return parameter(name)
        case .array(let items):
            var values: [SQLValue] = []
            for item in items { values.append(try compile(item)) }
            if values.allSatisfy({ $0.constant != nil }) { return .literal(.array(values.compactMap(\.constant))) }
            // A MISSING item becomes null, as in N1QL.
            let sql = "json_array(\(values.map(Self.jsonItem).joined(separator: ", ")))"
            return SQLValue(sql: sql, tag: "'array'", kind: .dynamic, canBeMissing: false, canBeNull: false, location: (sql, "'$'"))
        case .unary(.not, let a):
            let v = try compile(a)
            return .computed("(NOT \(v.asBoolean))", kind: .boolean, from: [v], canBeNull: v.canBeNull || v.canBeMissing)
        case .unary(.negate, let a):
            let v = try compile(a)
            return .computed("(- \(v.asNumber))", kind: .number, from: [v])
        case .binary(let op, _, _) where op == .and || op == .or:
            // However the chain was built (a builder adds one term at a time), it compiles as a
            // balanced tree: SQLite and this recursion both have depth limits.
            var terms: [SQLValue] = []
            var size = 0
            for term in Self.chain(op, e) {
                let value = try compile(term)
                size += value.sql.utf8.count + value.tag.utf8.count / 4
                try Self.checkSize(size)
                terms.append(value)
            }
            return try balanced(terms, op)
        case .binary(let op, let a, let b):
            return try binary(op, compile(a), compile(b))
        case .between(let a, let lower, let upper):
            return try between(compile(a), compile(lower), compile(upper))
        case .inList(let a, let items):
            return try inList(compile(a), items.map { (item) throws(StoreError) in try compile(item) })
        case .check(let a, let check, let negated):
            return self.check(try compile(a), check, negated: negated)
        case .function(let name, let args):
            return try function(name, args)
        case .countAll:
            return SQLValue(sql: "count(*)", tag: "'integer'", kind: .number, canBeMissing: false, canBeNull: false)
        case .caseWhen(let subject, let branches, let otherwise):
            return try caseWhen(subject: subject, branches: branches, otherwise: otherwise)
        case .quantified(let quantifier, let variable, let collection, let condition):
            return try quantified(quantifier, variable: variable, in: compile(collection), satisfies: condition)
        case .match:
            throw .invalidQuery("MATCH() can only be used as a condition of WHERE, joined to the rest with AND")
        case .rank(let index):
            guard let alias = fullText[index] else {
                throw .invalidQuery("RANK(\(index)) needs a MATCH(\(index), ...) condition in the same query's WHERE")
            }
            return SQLValue(sql: "(- \(alias).rank)", tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false)
        }
    }

    // MARK: - Properties, meta, parameters

    func source(named name: String?) throws(StoreError) -> Source {
        guard let name else {
            guard let first = sources.first else { throw .invalidQuery("the query has no source") }
            return first
        }
        guard let source = sources.first(where: { $0.name == name }) else {
            throw .invalidQuery("unknown source '\(name)'; the query's sources are \(sources.map { "'\($0.name)'" }.joined(separator: ", "))")
        }
        return source
    }

    mutating func property(source name: String?, path: [PathComponent]) throws(StoreError) -> SQLValue {
        var path = path
        var source: Source
        if name == nil, case .key(let first)? = path.first {
            if let variable = variables.last(where: { $0.name == first }) {
                path.removeFirst()
                if path.isEmpty { return variable.value }
                guard let location = variable.value.location else {
                    throw .invalidQuery("'\(first)' has no properties")
                }
                return .json(location.json, path: try Self.appending(path, to: location.path))
            }
            if path.count > 1, let aliased = sources.first(where: { $0.name == first }) {
                path.removeFirst()
                source = aliased
            } else if path.count == 1, let aliased = sources.first(where: { $0.name == first }) {
                return whole(aliased)
            } else {
                source = try self.source(named: nil)
            }
        } else {
            source = try self.source(named: name)
        }
        if path.isEmpty { return whole(source) }
        var body = source.column("body")
        if source.sqlAlias == "s0" {
            var keys: [String] = []
            for component in path {
                guard case .key(let key) = component else { break }
                keys.append(key)
            }
            if keys.isEmpty { firstSourcePaths = nil } else { firstSourcePaths?.append(keys) }
            body = firstSourceBody ?? body
        }
        return .json(body, path: try Self.appending(path, to: "'$'"))
    }

    /// A whole document as an object value.
    mutating func whole(_ source: Source) -> SQLValue {
        if source.sqlAlias == "s0" { readsFirstSourceWhole = true }
        var tag = "'object'"
        if source.isOuter { tag = "(CASE WHEN \(source.column("key")) IS NULL THEN NULL ELSE 'object' END)" }
        return SQLValue(sql: source.column("body"), tag: tag, kind: .dynamic, canBeMissing: source.isOuter, canBeNull: false,
                        location: (source.column("body"), "'$'"))
    }

    /// Appends property path components to a JSON path (an SQL string literal or expression).
    static func appending(_ path: [PathComponent], to base: String) throws(StoreError) -> String {
        var suffix = ""
        for component in path {
            switch component {
            case .key(let key):
                if key.contains("\"") { throw .invalidQuery("property name '\(key)' cannot be queried: it contains a double quote") }
                // SQLite's JSON paths end at a NUL byte.
                if key.utf8.contains(0) { throw .invalidQuery("property name '\(key.replacingOccurrences(of: "\u{0}", with: "\\u0000"))' cannot be queried: it contains a NUL character") }
                let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
                    && !("0"..."9").contains(key.unicodeScalars.first!)
                suffix += plain ? ".\(key)" : ".\"\(key)\""
            case .index(let i):
                // A negative index has no element (SQLite's path syntax has no such index).
                suffix += i >= 0 ? "[\(i)]" : "[999999999999]"
            }
        }
        if base == "'$'" { return SQLValue.quote("$" + suffix) }
        return "(\(base) || \(SQLValue.quote(suffix)))"
    }

    func meta(source name: String?, _ property: MetaProperty) throws(StoreError) -> SQLValue {
        let source = try self.source(named: name)
        let outer = source.isOuter
        func value(_ sql: String, _ kind: SQLValue.Kind) -> SQLValue {
            var v = SQLValue(sql: sql, tag: kind.validTag(sql), kind: kind, canBeMissing: outer, canBeNull: false)
            if outer { v.tag = "(CASE WHEN \(sql) IS NULL THEN NULL ELSE \(v.tag) END)" }
            return v
        }
        switch property {
        case .id: return value(source.column("id"), .string)
        case .revisionID: return value(source.column("rev"), .string)
        case .sequence: return value(source.column("seq"), .number)
        case .deleted: return value(source.column("deleted"), .boolean)
        case .expiration:
            let sql = "CAST(\(source.column("expiration")) * 1000 AS INTEGER)"
            return SQLValue(sql: sql, tag: "(CASE WHEN \(sql) IS NULL THEN NULL ELSE 'integer' END)", kind: .number, canBeMissing: true, canBeNull: false)
        }
    }

    mutating func parameter(_ name: String) -> SQLValue {
        let number: Int
        if let existing = parameters[name] {
            number = existing
        } else {
            number = parameters.count * 2 + 1
            parameters[name] = number
        }
        let (value, tag) = ("?\(number)", "?\(number + 1)")
        // Bound strings are plain text, not JSON: iterate and extract from their JSON form.
        return SQLValue(sql: value, tag: tag, kind: .dynamic, canBeMissing: true, canBeNull: true,
                        location: (Self.jsonText(sql: value, tag: tag), "'$'"))
    }
}
