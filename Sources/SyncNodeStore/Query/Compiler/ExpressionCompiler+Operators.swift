/// The operators: comparisons, boolean logic, arithmetic, `IS` checks and their SQL.
extension ExpressionCompiler {
    mutating func binary(_ op: BinaryOperator, _ a: SQLValue, _ b: SQLValue) throws(StoreError) -> SQLValue {
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
    func typeCheck(_ op: BinaryOperator, _ a: SQLValue, kind: SQLValue.Kind, constant: DocumentValue?) -> String {
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
    static func numberRangeCheck(_ op: BinaryOperator, _ a: SQLValue, bound: Double) -> String? {
        switch op {
        case .equal: return bound == 0 || bound == 1 ? nil : ""
        case .greater, .greaterOrEqual: return bound > 1 ? " AND \(a.sql) < ''" : nil
        case .less: return bound <= 0 ? "" : nil
        case .lessOrEqual: return bound < 0 ? "" : nil
        default: return nil
        }
    }

    mutating func between(_ a: SQLValue, _ lower: SQLValue, _ upper: SQLValue) throws(StoreError) -> SQLValue {
        // Numeric bounds keep text out natively; a range without 0 and 1 also keeps out the booleans.
        if a.kind == .dynamic, let l = lower.constant?.numberValue, let u = upper.constant?.numberValue, l > 1 || u < 0 {
            return .computed("(\(a.sql) BETWEEN \(lower.sql) AND \(upper.sql))", kind: .boolean, from: [a])
        }
        try Self.checkSize(of: a, copies: 2)
        return try binary(.and, compare(.greaterOrEqual, a, lower), compare(.lessOrEqual, a, upper))
    }

    mutating func inList(_ a: SQLValue, _ items: [SQLValue]) throws(StoreError) -> SQLValue {
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
    mutating func balanced(_ terms: [SQLValue], _ op: BinaryOperator) throws(StoreError) -> SQLValue {
        try terms.balancedTree { (a, b) throws(StoreError) in try binary(op, a, b) }
    }

    func check(_ a: SQLValue, _ check: Check, negated: Bool) -> SQLValue {
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

    mutating func caseWhen(subject: QueryExpression?, branches: [CaseBranch], otherwise: QueryExpression?) throws(StoreError) -> SQLValue {
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

    mutating func quantified(_ quantifier: Quantifier, variable: String, in collection: SQLValue, satisfies condition: QueryExpression) throws(StoreError) -> SQLValue {
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
