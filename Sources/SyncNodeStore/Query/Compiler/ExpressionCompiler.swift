/// Compiles ``QueryExpression`` trees to ``SQLValue``s for one statement (or
/// one index definition). The semantics it implements are documented in the
/// README's query section; the differential test checks them against a
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

    private struct Variable {
        let name: String
        let value: SQLValue
    }

    var sources: [Source]
    /// Parameter name -> SQL parameter number (the value is bound at `?n`, its tag at `?n+1`).
    private(set) var parameters: [String: Int] = [:]
    /// Full-text index name -> SQL alias of its joined FTS table, filled while compiling MATCHes.
    var fullText: [String: String] = [:]
    private var variables: [Variable] = []
    private var nextEach = 0

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
    private static func checkSize(of value: SQLValue, copies: Int) throws(StoreError) {
        let (size, overflow) = (value.sql.utf8.count + value.tag.utf8.count).multipliedReportingOverflow(by: copies)
        try checkSize(overflow ? .max : size)
    }

    static func checkSize(_ size: Int) throws(StoreError) {
        guard size <= maximumSQLSize else {
            throw .invalidQuery("the query is too complex: it compiles to more than \(maximumSQLSize >> 20) MB of SQL")
        }
    }

    private mutating func node(_ e: QueryExpression) throws(StoreError) -> SQLValue {
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

    private func source(named name: String?) throws(StoreError) -> Source {
        guard let name else {
            guard let first = sources.first else { throw .invalidQuery("the query has no source") }
            return first
        }
        guard let source = sources.first(where: { $0.name == name }) else {
            throw .invalidQuery("unknown source '\(name)'; the query's sources are \(sources.map { "'\($0.name)'" }.joined(separator: ", "))")
        }
        return source
    }

    private func property(source name: String?, path: [PathComponent]) throws(StoreError) -> SQLValue {
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
        return .json(source.column("body"), path: try Self.appending(path, to: "'$'"))
    }

    /// A whole document as an object value.
    private func whole(_ source: Source) -> SQLValue {
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

    private func meta(source name: String?, _ property: MetaProperty) throws(StoreError) -> SQLValue {
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

    private mutating func parameter(_ name: String) -> SQLValue {
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

    // MARK: - Operators

    private mutating func binary(_ op: BinaryOperator, _ a: SQLValue, _ b: SQLValue) throws(StoreError) -> SQLValue {
        switch op {
        case .and, .or:
            let sql = "(\(a.asBoolean) \(op.rawValue) \(b.asBoolean))"
            // FALSE AND x is false, TRUE OR x is true, whatever x is (MISSING included).
            let decided = op == .and ? "0" : "1"
            var tag = "CASE WHEN \(sql) = \(decided) THEN \(op == .and ? "'false'" : "'true'")"
            let missing = [a, b].filter(\.canBeMissing)
            if !missing.isEmpty { tag += " WHEN \(missing.map { "\($0.tag) IS NULL" }.joined(separator: " OR ")) THEN NULL" }
            tag += " WHEN \(sql) IS NULL THEN 'null' ELSE \(op == .and ? "'true'" : "'false'") END"
            return SQLValue(sql: sql, tag: tag, kind: .boolean, canBeMissing: !missing.isEmpty, canBeNull: true)
        case .add, .subtract, .multiply:
            return .computed("(\(a.asNumber) \(op.rawValue) \(b.asNumber))", kind: .number, from: [a, b])
        case .divide:
            return .computed("(\(a.asNumber) * 1.0 / \(b.asNumber))", kind: .number, from: [a, b])
        case .modulo:
            return .computed("(CAST(\(a.asNumber) AS INTEGER) % CAST(\(b.asNumber) AS INTEGER))", kind: .number, from: [a, b])
        case .concat:
            return .computed("(\(a.asString) || \(b.asString))", kind: .string, from: [a, b])
        case .like:
            return .computed("(\(a.asString) LIKE \(b.asString) ESCAPE '\\')", kind: .boolean, from: [a, b])
        case .notEqual:
            let equal = compare(.equal, a, b)
            return .computed("(NOT \(equal.sql))", kind: .boolean, from: [a, b])
        case .equal, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return compare(op, a, b)
        }
    }

    /// A typed comparison: values of different types are never equal or
    /// ordered (false); null and MISSING give null and MISSING.
    func compare(_ op: BinaryOperator, _ a: SQLValue, _ b: SQLValue) -> SQLValue {
        // Normalize: a dynamic operand first, else a constant second.
        var a = a, b = b, op = op
        let bothOrNeither = (a.kind == .dynamic) == (b.kind == .dynamic)
        if (a.kind != .dynamic && b.kind == .dynamic) || (bothOrNeither && a.constant != nil && b.constant == nil) {
            swap(&a, &b)
            op = op.mirrored
        }
        // A whole document or an array constant against a scalar: false, decided here
        // (comparing the body column itself would let SQLite substitute the scalar
        // into the row's other JSON calls).
        if a.kind == .dynamic, b.kind != .dynamic, a.tag == "'object'" || a.tag == "'array'" {
            return .computed("(CASE WHEN \(b.sql) IS NULL THEN NULL ELSE 0 END)", kind: .boolean, from: [a, b])
        }
        let native = "\(a.sql) \(op.rawValue) \(b.sql)"
        let sql: String
        switch (a.kind, b.kind) {
        case let (x, y) where x == y && x != .dynamic:
            sql = "(\(native))"
        case (.dynamic, .dynamic):
            sql = "(\(native) AND \(a.typeClass) = \(b.typeClass))"
        case (.dynamic, let kind):
            let check = typeCheck(op, a, kind: kind, constant: b.constant)
            sql = check.isEmpty ? "(\(native))" : "(\(native)\(check))"
            if b.constant == nil, b.canBeNull || b.canBeMissing {
                return .computed("(CASE WHEN \(b.sql) IS NULL THEN NULL ELSE \(sql) END)", kind: .boolean, from: [a, b])
            }
        default:
            // Two different static kinds: false unless one side is null or MISSING.
            sql = "(CASE WHEN \(a.sql) IS NULL OR \(b.sql) IS NULL THEN NULL ELSE 0 END)"
        }
        return .computed(sql, kind: .boolean, from: [a, b])
    }

    /// The SQL to AND onto `a OP constant` so that only values of `kind`
    /// pass; empty when the native comparison already implies it.
    private func typeCheck(_ op: BinaryOperator, _ a: SQLValue, kind: SQLValue.Kind, constant: DocumentValue?) -> String {
        // json_extract gives true/false as 1/0 and arrays/objects as JSON text, so a
        // number comparison can meet booleans and a text comparison arrays and objects.
        let tagCheck: String
        switch kind {
        case .number: tagCheck = " AND nullif(\(a.tag), 'null') IN ('integer', 'real')"
        case .string: tagCheck = " AND nullif(\(a.tag), 'null') = 'text'"
        case .boolean: tagCheck = " AND nullif(\(a.tag), 'null') IN ('true', 'false')"
        case .dynamic: tagCheck = ""
        }
        switch (kind, constant) {
        case (.number, .int(let i)?) where constant?.equalsOnlyItsOwnType == true:
            return Self.numberRangeCheck(op, a, bound: Double(i)) ?? tagCheck
        case (.number, .double(let d)?):
            return Self.numberRangeCheck(op, a, bound: d) ?? tagCheck
        case (.string, .string?) where op == .equal && constant?.equalsOnlyItsOwnType == true:
            return ""
        default:
            return tagCheck
        }
    }

    /// For `a OP number`: the bound that keeps text out of the native
    /// comparison (every number sorts before every text), when the range
    /// cannot hold the booleans' 0 and 1; nil when it can.
    private static func numberRangeCheck(_ op: BinaryOperator, _ a: SQLValue, bound: Double) -> String? {
        switch op {
        case .equal: return bound == 0 || bound == 1 ? nil : ""
        case .greater, .greaterOrEqual: return bound > 1 ? " AND \(a.sql) < ''" : nil
        case .less: return bound <= 0 ? "" : nil
        case .lessOrEqual: return bound < 0 ? "" : nil
        default: return nil
        }
    }

    private mutating func between(_ a: SQLValue, _ lower: SQLValue, _ upper: SQLValue) throws(StoreError) -> SQLValue {
        // Numeric bounds keep text out natively; a range without 0 and 1 also keeps out the booleans.
        if a.kind == .dynamic, let l = lower.constant?.numberValue, let u = upper.constant?.numberValue, l > 1 || u < 0 {
            return .computed("(\(a.sql) BETWEEN \(lower.sql) AND \(upper.sql))", kind: .boolean, from: [a])
        }
        try Self.checkSize(of: a, copies: 2)
        return try binary(.and, compare(.greaterOrEqual, a, lower), compare(.lessOrEqual, a, upper))
    }

    private mutating func inList(_ a: SQLValue, _ items: [SQLValue]) throws(StoreError) -> SQLValue {
        guard !items.isEmpty else { return .literal(.bool(false)) }
        // Constants the native IN compares exactly (no 0/1 meeting booleans, no text meeting JSON).
        var native: [SQLValue] = []
        var others: [SQLValue] = []
        for item in items {
            if item.constant?.equalsOnlyItsOwnType == true { native.append(item) } else { others.append(item) }
        }
        var terms: [SQLValue] = []
        let isContainer = a.tag == "'object'" || a.tag == "'array'"
        if !native.isEmpty {
            if !isContainer, a.kind == .dynamic || native.allSatisfy({ $0.kind == a.kind }) {
                terms.append(.computed("(\(a.sql) IN (\(native.map(\.sql).joined(separator: ", "))))", kind: .boolean, from: [a]))
            } else {
                others += native
            }
        }
        try Self.checkSize(of: a, copies: others.count + 1)
        terms += others.map { compare(.equal, a, $0) }
        return try balanced(terms, .or)
    }

    /// The operands of a chain of `op` in order, found without recursion.
    static func chain(_ op: BinaryOperator, _ e: QueryExpression) -> [QueryExpression] {
        var terms: [QueryExpression] = []
        var pending = [e]
        while let next = pending.popLast() {
            if case .binary(op, let left, let right) = next {
                pending.append(right)
                pending.append(left)
            } else {
                terms.append(next)
            }
        }
        return terms
    }

    /// Joins terms with AND/OR as a balanced tree, so long lists stay shallow.
    private mutating func balanced(_ terms: [SQLValue], _ op: BinaryOperator) throws(StoreError) -> SQLValue {
        try terms.balancedTree { (a, b) throws(StoreError) in try binary(op, a, b) }
    }

    private func check(_ a: SQLValue, _ check: Check, negated: Bool) -> SQLValue {
        var sql: String
        switch check {
        case .null: sql = a.canBeNull ? "(\(a.tag) IS 'null')" : "0"
        case .missing: sql = a.canBeMissing ? "(\(a.tag) IS NULL)" : "0"
        case .valued:
            switch (a.canBeMissing, a.canBeNull) {
            case (false, false): sql = "1"
            case (true, false): sql = "(\(a.tag) IS NOT NULL)"
            case (false, true): sql = "(\(a.sql) IS NOT NULL)"
            case (true, true): sql = "(\(a.tag) IS NOT NULL AND \(a.tag) != 'null')"
            }
        }
        if negated { sql = "(NOT \(sql))" }
        return SQLValue(sql: sql, tag: SQLValue.Kind.boolean.validTag(sql), kind: .boolean, canBeMissing: false, canBeNull: false)
    }

    private mutating func caseWhen(subject: QueryExpression?, branches: [CaseBranch], otherwise: QueryExpression?) throws(StoreError) -> SQLValue {
        let subjectValue = try subject.map { (s) throws(StoreError) in try compile(s) }
        if let subjectValue { try Self.checkSize(of: subjectValue, copies: branches.count) }
        var conditions: [String] = []
        var results: [SQLValue] = []
        for branch in branches {
            let when = try compile(branch.when)
            conditions.append(subjectValue.map { compare(.equal, $0, when).sql } ?? when.asBoolean)
            results.append(try compile(branch.then))
        }
        let fallback = try otherwise.map { (o) throws(StoreError) in try compile(o) } ?? .literal(.null)
        results.append(fallback)
        let kinds = Set(results.filter { $0.constant != .null }.map(\.kind))
        let kind = kinds.count == 1 ? kinds.first ?? .dynamic : .dynamic
        func build(_ part: (SQLValue) -> String) -> String {
            var sql = "(CASE"
            for (condition, result) in zip(conditions, results) { sql += " WHEN \(condition) THEN \(part(result))" }
            return sql + " ELSE \(part(fallback)) END)"
        }
        let sql = build(\.sql)
        let tag = build(\.tag)
        let location: (String, String)? = kind == .dynamic ? (Self.jsonText(sql: sql, tag: tag), "'$'") : nil
        return SQLValue(sql: sql, tag: tag, kind: kind, canBeMissing: results.contains(where: \.canBeMissing),
                        canBeNull: true, location: location)
    }

    /// A value as an argument of `json_array`: JSON (subtyped), or NULL for null/MISSING.
    static func jsonItem(_ v: SQLValue) -> String {
        switch v.kind {
        // Integral reals as integers, as stored JSON writes them (arrays compare by their text).
        case .number: return "(CASE WHEN typeof(\(v.sql)) = 'real' AND abs(\(v.sql)) < 9e15 AND \(v.sql) = CAST(\(v.sql) AS INTEGER) THEN CAST(\(v.sql) AS INTEGER) ELSE \(v.sql) END)"
        case .string: return v.sql
        case .boolean: return "json(CASE WHEN \(v.sql) IS NULL THEN 'null' WHEN \(v.sql) THEN 'true' ELSE 'false' END)"
        case .dynamic: return "json(\(jsonText(sql: v.sql, tag: v.tag)))"
        }
    }

    /// JSON text of a dynamic value (for iterating or extracting from it).
    static func jsonText(sql: String, tag: String) -> String {
        "(CASE \(tag) WHEN 'text' THEN json_quote(\(sql)) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' ELSE \(sql) END)"
    }

    private mutating func quantified(_ quantifier: Quantifier, variable: String, in collection: SQLValue, satisfies condition: QueryExpression) throws(StoreError) -> SQLValue {
        guard let location = collection.location ?? (collection.kind == .dynamic ? (collection.sql, "'$'") : nil) else {
            return .computed("(CASE WHEN \(collection.sql) IS NULL THEN NULL END)", kind: .boolean, from: [collection])
        }
        nextEach += 1
        let each = "e\(nextEach)"
        let element = SQLValue(sql: "\(each).value", tag: "\(each).type", kind: .dynamic, canBeMissing: false, canBeNull: true,
                               location: (location.json, "\(each).fullkey"))
        variables.append(Variable(name: variable, value: element))
        defer { variables.removeLast() }
        let test = try compile(condition).asBoolean
        let iterate = "json_each(\(location.json), \(location.path)) AS \(each)"
        let sql = quantifier == .any
            ? "(CASE WHEN \(collection.tag) = 'array' THEN EXISTS (SELECT 1 FROM \(iterate) WHERE \(test)) END)"
            : "(CASE WHEN \(collection.tag) = 'array' THEN NOT EXISTS (SELECT 1 FROM \(iterate) WHERE NOT coalesce(\(test), 0)) END)"
        return .computed(sql, kind: .boolean, from: [collection])
    }

    // MARK: - Functions

    private mutating func function(_ name: String, _ arguments: [QueryExpression]) throws(StoreError) -> SQLValue {
        try FunctionCatalog.validate(name, argumentCount: arguments.count)
        var args: [SQLValue] = []
        for argument in arguments { args.append(try compile(argument)) }
        func number(_ sql: String) -> SQLValue { .computed(sql, kind: .number, from: args) }
        let a = args.first
        switch name {
        case "COUNT":
            return SQLValue(sql: "count(\(args[0].sql))", tag: "'integer'", kind: .number, canBeMissing: false, canBeNull: false)
        case "SUM", "AVG":
            let sql = "\(name.lowercased())(\(args[0].asNumber))"
            return SQLValue(sql: sql, tag: "(CASE WHEN \(sql) IS NULL THEN 'null' ELSE \(SQLValue.Kind.number.validTag(sql)) END)",
                            kind: .number, canBeMissing: false, canBeNull: true)
        case "MIN", "MAX":
            let v = args[0]
            if v.kind == .number || v.kind == .string {
                let sql = "\(name.lowercased())(\(v.sql))"
                return SQLValue(sql: sql, tag: "(CASE WHEN \(sql) IS NULL THEN 'null' ELSE \(v.kind.validTag(sql)) END)",
                                kind: v.kind, canBeMissing: false, canBeNull: true)
            }
            let json = "sn_\(name.lowercased())(\(v.tag), \(v.sql))"
            return SQLValue(sql: "json_extract(\(json), '$')", tag: "coalesce(json_type(\(json)), 'null')", kind: .dynamic,
                            canBeMissing: false, canBeNull: true, location: (json, "'$'"))
        case "LOWER", "UPPER":
            return .computed("sn_\(name.lowercased())(\(a!.asString))", kind: .string, from: args)
        case "LENGTH":
            return number("length(\(a!.asString))")
        case "TRIM", "LTRIM", "RTRIM":
            return .computed("\(name.lowercased())(\(a!.asString), char(32, 9, 10, 13))", kind: .string, from: args)
        case "CONTAINS":
            return .computed("(instr(\(args[0].asString), \(args[1].asString)) > 0)", kind: .boolean, from: args)
        case "REGEXP_LIKE":
            return .computed("sn_regexp_like(\(args[0].asString), \(args[1].asString))", kind: .boolean, from: args)
        case "TYPE":
            // Never MISSING or null itself: the type's name, "missing" included (Mango's $type and ranges use it).
            let sql = "(CASE \(a!.tag) WHEN 'null' THEN 'null' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' "
                + "WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' "
                + "WHEN 'array' THEN 'array' WHEN 'object' THEN 'object' ELSE 'missing' END)"
            return SQLValue(sql: sql, tag: "'text'", kind: .string, canBeMissing: false, canBeNull: false)
        case "ARRAY_LENGTH":
            return number("(CASE WHEN \(a!.tag) = 'array' THEN json_array_length(\(a!.sql)) END)")
        case "ARRAY_CONTAINS":
            let array = args[0], value = args[1]
            guard array.kind == .dynamic else {
                return .computed("(CASE WHEN \(array.sql) IS NULL OR \(value.sql) IS NULL THEN NULL END)", kind: .boolean, from: args)
            }
            let location = array.location ?? (array.sql, "'$'")
            nextEach += 1
            let each = "e\(nextEach)"
            let element = SQLValue(sql: "\(each).value", tag: "\(each).type", kind: .dynamic, canBeMissing: false, canBeNull: true)
            let equal = compare(.equal, element, value).sql
            let sql = "(CASE WHEN \(array.tag) = 'array' AND \(value.sql) IS NOT NULL THEN EXISTS (SELECT 1 FROM json_each(\(location.json), \(location.path)) AS \(each) WHERE \(equal)) END)"
            return .computed(sql, kind: .boolean, from: args)
        case "ROUND":
            return number(args.count == 2 ? "round(\(args[0].asNumber), CAST(\(args[1].asNumber) AS INTEGER))" : "round(\(a!.asNumber))")
        case "POWER": return number("pow(\(args[0].asNumber), \(args[1].asNumber))")
        case "ATAN2": return number("atan2(\(args[0].asNumber), \(args[1].asNumber))")
        case "LOG": return number("log10(\(a!.asNumber))")
        case "PI": return SQLValue(sql: "pi()", tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false)
        case "E": return SQLValue(sql: "exp(1)", tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false)
        default:
            // ABS CEIL FLOOR TRUNC SIGN SQRT EXP LN SIN COS TAN ASIN ACOS ATAN DEGREES RADIANS: SQLite's own.
            return number("\(name.lowercased())(\(a!.asNumber))")
        }
    }
}

extension BinaryOperator {
    /// The operator with its operands swapped (`a < b` is `b > a`).
    var mirrored: BinaryOperator {
        switch self {
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        default: return self
        }
    }
}

extension DocumentValue {
    /// True for a constant that SQLite's native `=` can only match against a
    /// value of the same type: `json_extract` gives true/false as 1/0 and
    /// arrays/objects as text starting with `[`/`{`.
    var equalsOnlyItsOwnType: Bool {
        switch self {
        case .int(let i): return i != 0 && i != 1
        case .double(let d): return d != 0 && d != 1
        case .string(let s): return !s.hasPrefix("[") && !s.hasPrefix("{")
        default: return false
        }
    }

    var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
}
