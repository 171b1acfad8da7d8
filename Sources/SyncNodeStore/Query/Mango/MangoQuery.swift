/// A Mango query, CouchDB's JSON query language (`_find`, PouchDB's `find`):
/// a selector, with the fields to return, a sort, `limit` and `skip`.
///
/// It compiles into the same query model as SQL++ and the ``QueryBuilder``,
/// so one engine answers all three (and value indexes serve it):
///
/// ```swift
/// let find = try MangoQuery(json: #"{"selector": {"type": "task", "due": {"$lt": "2027"}}, "sort": ["due"], "limit": 10}"#)
/// for row in try find.query(on: tasks).execute() { print(row.string(forKey: "id") ?? "") }
/// ```
///
/// Semantics are CouchDB's: a condition on a field never matches a document
/// without that field (but `$exists: false`); `$eq`/`$ne`/`$in`/`$nin` compare
/// values of one type (and `null` with `null`); range operators order values of
/// different types as CouchDB does (null < booleans < numbers < strings <
/// arrays < objects), so `{"$gt": 5}` also matches strings. Strings compare
/// by their UTF-8 bytes (CouchDB uses ICU collation, which differs for case and
/// accents). `$allMatch` and `$all` need a non-empty array; `$mod` needs an
/// integer. `_id` and `_rev` are the document's ID and winning revision, and
/// `_deleted` is true on a tombstone. Unknown operators are an error.
public struct MangoQuery: Sendable, Equatable {
    /// The selector, as given.
    public var selector: DocumentValue
    /// The fields to return (dotted paths); nil returns whole documents.
    public var fields: [String]?
    /// Sort keys, in order; ties (and no sort) go by document ID.
    public var sort: [(field: String, descending: Bool)]
    /// At most this many results (CouchDB's default: 25).
    public var limit: Int
    /// Results to skip first.
    public var skip: Int
    /// Indexes the client asked for (`use_index`); SQLite's planner chooses.
    public var useIndex: [String]

    /// Equal when every member is (`sort` compared entry by entry).
    public static func == (a: MangoQuery, b: MangoQuery) -> Bool {
        a.selector == b.selector && a.fields == b.fields && a.limit == b.limit && a.skip == b.skip && a.useIndex == b.useIndex
            && a.sort.map(\.field) == b.sort.map(\.field) && a.sort.map(\.descending) == b.sort.map(\.descending)
    }

    /// Reads a `_find` request body: `selector` (required), `fields`, `sort`,
    /// `limit`, `skip`, `use_index`; other members (`bookmark`,
    /// `execution_stats`, `r`, `conflicts`...) are left to the caller.
    /// - Throws: ``StoreError/invalidQuery(_:)`` naming what is wrong: no `selector` object, `fields` not an
    ///   array of non-empty names, a malformed `sort`, or a `limit`/`skip` that is not an integer from 0
    ///   to 2³¹-1. The selector itself is checked by ``query(on:includingDocuments:)``.
    public init(_ body: [String: DocumentValue]) throws(StoreError) {
        guard case .dictionary? = body["selector"] else { throw .invalidQuery("a Mango query needs a \"selector\" object") }
        selector = body["selector"] ?? [:]
        switch body["fields"] {
        case nil, .null?: fields = nil
        case .array(let items)?:
            fields = try items.map { (item) throws(StoreError) in
                guard case .string(let s) = item, !s.isEmpty else { throw .invalidQuery("\"fields\" must be an array of field names") }
                return s
            }
        default: throw .invalidQuery("\"fields\" must be an array of field names")
        }
        sort = []
        if case .array(let items)? = body["sort"] {
            for item in items {
                switch item {
                case .string(let field): sort.append((field, false))
                case .dictionary(let d) where d.count == 1:
                    guard let (field, direction) = d.first, case .string(let dir) = direction, dir == "asc" || dir == "desc" else {
                        throw .invalidQuery("a sort entry is \"field\" or {\"field\": \"asc\"|\"desc\"}")
                    }
                    sort.append((field, dir == "desc"))
                default: throw .invalidQuery("a sort entry is \"field\" or {\"field\": \"asc\"|\"desc\"}")
                }
            }
        } else if body["sort"] != nil {
            throw .invalidQuery("\"sort\" must be an array")
        }
        limit = try Self.count(body["limit"], name: "limit") ?? 25
        skip = try Self.count(body["skip"], name: "skip") ?? 0
        switch body["use_index"] {
        case .string(let s)?: useIndex = [s]
        case .array(let items)?: useIndex = items.compactMap { $0.stringValue }
        default: useIndex = []
        }
    }

    /// Parses a `_find` request body given as JSON text.
    /// - Throws: ``StoreError/invalidQuery(_:)`` when the text is not JSON or not an object, or for the
    ///   reasons of ``init(_:)``.
    public init(json: String) throws(StoreError) {
        let value: DocumentValue
        do {
            value = try DocumentValue(json: json)
        } catch {
            throw .invalidQuery("a Mango query must be JSON: \(error)")
        }
        guard case .dictionary(let body) = value else { throw .invalidQuery("a Mango query is a JSON object") }
        try self.init(body)
    }

    /// A field's names: fields are dotted paths, and `\.` is a dot inside a name.
    package static func path(_ field: String) -> [String] {
        var names: [String] = []
        var current = ""
        var escaped = false
        for c in field {
            if escaped { current.append(c); escaped = false; continue }
            switch c {
            case "\\": escaped = true
            case ".": names.append(current); current = ""
            default: current.append(c)
            }
        }
        names.append(current)
        return names
    }

    private static func count(_ value: DocumentValue?, name: String) throws(StoreError) -> Int? {
        guard let value else { return nil }
        guard case .int(let n) = value, n >= 0, n <= Int64(Int32.max) else { throw .invalidQuery("\"\(name)\" must be a non-negative integer") }
        return Int(n)
    }

    /// The query on `collection`. Its rows have `id`, `rev` and, with
    /// `includingDocuments`, `doc` (the document's body) columns, in sort
    /// order, `skip` and `limit` applied. `fields` is not applied here:
    /// project `doc` with it. Without the bodies, rows stay small whatever the
    /// documents' size: read each body by its `id` and `rev` when needed.
    /// - Throws: ``StoreError/invalidQuery(_:)`` for a selector CouchDB would refuse (an unknown operator,
    ///   an operator given the wrong kind of argument...).
    public func query(on collection: DocumentCollection, includingDocuments: Bool = true) throws(StoreError) -> Query {
        var compiler = MangoCompiler()
        let condition = try compiler.selector(selector, base: [])
        var order = sort.map { OrderItem(expression: MangoCompiler.subject(MangoCompiler.path($0.field)), descending: $0.descending) }
        order.append(OrderItem(expression: .meta(source: nil, .id)))
        let statement = SelectStatement(
            results: [.expression(.meta(source: nil, .id), alias: "id"), .expression(.meta(source: nil, .revisionID), alias: "rev")]
                + (includingDocuments ? [.all(source: nil, alias: "doc")] : []),
            from: SourceSpec(collection: .collection(collection), alias: MangoCompiler.documentSource),
            whereClause: condition, orderBy: order, limit: .literal(.int(Int64(limit))), offset: .literal(.int(Int64(skip))))
        return Query(database: collection.database, statement: statement)
    }
}

/// Turns a Mango selector into a query condition.
struct MangoCompiler {
    private var variables = 0

    /// The name a selector's document goes by: one no field can spell, so that a field called
    /// like its collection (`tags` in `db.app.tags`) is a field, not the whole document.
    static let documentSource = "\u{0}doc"

    static func path(_ field: String) -> [PathComponent] {
        MangoQuery.path(field).map(PathComponent.key)
    }

    /// A selector object: its members all hold (implicit `$and`). Inside
    /// `$elemMatch`/`$allMatch` (`onElement`), `base` is the element and
    /// operators may apply to it directly.
    mutating func selector(_ value: DocumentValue, base: [PathComponent], onElement: Bool = false) throws(StoreError) -> QueryExpression? {
        guard case .dictionary(let members) = value else { throw .invalidQuery("a selector must be a JSON object, got \(value.toJSON())") }
        var terms: [QueryExpression] = []
        for (key, argument) in members.sorted(by: { $0.key < $1.key }) {
            if ["$and", "$or", "$nor", "$not"].contains(key) {
                terms.append(try combination(key, argument, base: base, onElement: onElement))
            } else if key.hasPrefix("$"), onElement {
                terms.append(try condition(key, argument, on: base))
            } else if key.hasPrefix("$") {
                throw .invalidQuery("unknown Mango combination operator \(key) (known: $and $or $nor $not; field operators go inside a field)")
            } else {
                terms.append(contentsOf: try field(base + Self.path(key), argument))
            }
        }
        return Self.all(terms)
    }

    private mutating func combination(
        _ op: String, _ argument: DocumentValue, base: [PathComponent], onElement: Bool
    ) throws(StoreError) -> QueryExpression {
        if op == "$not" {
            return .unary(.not, Self.truth(try selector(argument, base: base, onElement: onElement) ?? .literal(true)))
        }
        guard case .array(let items) = argument else { throw .invalidQuery("\(op) takes an array of selectors") }
        var parts: [QueryExpression] = []
        for item in items { parts.append(try selector(item, base: base, onElement: onElement) ?? .literal(true)) }
        switch op {
        case "$and": return Self.all(parts) ?? .literal(true)
        case "$or": return Self.any(parts) ?? .literal(false)
        default: return .unary(.not, Self.truth(Self.any(parts) ?? .literal(false)))
        }
    }

    /// The conditions on one field: operators, nested fields, or an implicit `$eq`.
    private mutating func field(_ path: [PathComponent], _ argument: DocumentValue) throws(StoreError) -> [QueryExpression] {
        if case .dictionary(let members) = argument, !members.isEmpty {
            let operators = members.keys.filter { $0.hasPrefix("$") }
            if operators.isEmpty { return [try selector(argument, base: path)].compactMap { $0 } }
            guard operators.count == members.count else {
                throw .invalidQuery("a field's object mixes operators and sub-fields: \(argument.toJSON())")
            }
            var terms: [QueryExpression] = []
            for (op, operand) in members.sorted(by: { $0.key < $1.key }) { terms.append(try condition(op, operand, on: path)) }
            return terms
        }
        return [try condition("$eq", argument, on: path)]
    }

    private mutating func condition(_ op: String, _ operand: DocumentValue, on path: [PathComponent]) throws(StoreError) -> QueryExpression {
        let x = Self.subject(path)
        let exists = QueryExpression.check(x, .missing, negated: true)
        switch op {
        case "$eq":
            return operand == .null ? .check(x, .null, negated: false) : .binary(.equal, x, .literal(operand))
        case "$ne":
            if operand == .null { return .check(x, .valued, negated: false) }
            return Self.any([.check(x, .null, negated: false), .binary(.notEqual, x, .literal(operand))])!
        case "$gt", "$gte", "$lt", "$lte":
            return range(op, x, operand)
        case "$in", "$nin":
            guard case .array(let items) = operand else { throw .invalidQuery("\(op) takes an array") }
            // An array field is in the list when one of its elements is (CouchDB's rule), never as a whole.
            func member(_ v: QueryExpression) -> QueryExpression {
                let values = items.filter { $0 != .null }
                var test = values.isEmpty ? QueryExpression.literal(false) : .inList(v, values.map { .literal($0) })
                if values.count < items.count { test = Self.any([.check(v, .null, negated: false), test])! }
                return test
            }
            variables += 1
            let element = "\u{0}m\(variables)"
            let elementPath = QueryExpression.property(source: nil, path: [.key(element)])
            let found = QueryExpression.caseWhen(
                subject: nil, branches: [CaseBranch(when: .binary(.equal, .function("TYPE", [x]), .literal("array")),
                                                    then: .quantified(.any, variable: element, in: x, satisfies: member(elementPath)))],
                otherwise: member(x))
            return op == "$in" ? found : Self.all([exists, .unary(.not, Self.truth(found))])!
        case "$exists":
            guard case .bool(let wanted) = operand else { throw .invalidQuery("$exists takes true or false") }
            return .check(x, .missing, negated: wanted)
        case "$type":
            let names = ["null", "boolean", "number", "string", "array", "object"]
            guard case .string(let name) = operand, names.contains(name) else {
                throw .invalidQuery("$type takes one of \(names.joined(separator: ", "))")
            }
            return .binary(.equal, .function("TYPE", [x]), .literal(operand))
        case "$size":
            guard case .int(let n) = operand, n >= 0 else { throw .invalidQuery("$size takes a non-negative integer") }
            return .binary(.equal, .function("ARRAY_LENGTH", [x]), .literal(operand))
        case "$mod":
            guard case .array(let pair) = operand, pair.count == 2, case .int(let divisor) = pair[0], case .int = pair[1], divisor != 0 else {
                throw .invalidQuery("$mod takes [divisor, remainder], two integers, the divisor not 0")
            }
            // Only integers (CouchDB's rule); the remainder has the dividend's sign, as SQLite's % gives it.
            return Self.all([.binary(.equal, x, .function("TRUNC", [x])), .binary(.equal, .binary(.modulo, x, .literal(pair[0])), .literal(pair[1]))])!
        case "$regex":
            guard case .string(let pattern) = operand else { throw .invalidQuery("$regex takes a string (a regular expression)") }
            // Compiled now, so a bad pattern is refused before anything runs, not on the first row it meets.
            do { _ = try RegexCache.shared.regex(pattern) } catch let error as StoreError { throw error } catch { throw .invalidQuery("\(error)") }
            return .function("REGEXP_LIKE", [x, .literal(operand)])
        case "$all":
            guard case .array(let items) = operand else { throw .invalidQuery("$all takes an array") }
            guard !items.isEmpty else { return .literal(false) }
            return Self.all(items.map { .function("ARRAY_CONTAINS", [x, .literal($0)]) })!
        case "$elemMatch", "$allMatch":
            variables += 1
            let variable = "\u{0}m\(variables)"
            guard case .dictionary = operand else { throw .invalidQuery("\(op) takes a selector object") }
            let inner = try selector(operand, base: [.key(variable)], onElement: true) ?? .literal(true)
            if op == "$elemMatch" { return .quantified(.any, variable: variable, in: x, satisfies: inner) }
            return Self.all([.binary(.greater, .function("ARRAY_LENGTH", [x]), .literal(0)),
                             .quantified(.every, variable: variable, in: x, satisfies: inner)])!
        case "$not":
            let inner = Self.all(try field(path, operand)) ?? .literal(true)
            return Self.all([exists, .unary(.not, Self.truth(inner))])!
        default:
            throw .invalidQuery("unknown Mango operator \(op) (known: $eq $ne $gt $gte $lt $lte $in $nin $exists $type $size $mod $regex $all $elemMatch $allMatch $not)")
        }
    }

    /// What a field names: CouchDB's `_id` and `_rev` are the document's ID and winning revision,
    /// and `_deleted` is true on a tombstone and missing otherwise, as in a CouchDB document.
    static func subject(_ path: [PathComponent]) -> QueryExpression {
        switch path {
        case [.key("_id")]: return .meta(source: nil, .id)
        case [.key("_rev")]: return .meta(source: nil, .revisionID)
        case [.key("_deleted")]:
            return .caseWhen(subject: nil, branches: [CaseBranch(when: .meta(source: nil, .deleted), then: .literal(true))], otherwise: .missing)
        default: return .property(source: nil, path: path)
        }
    }

    /// `$gt` and friends in CouchDB's order: within the operand's type by
    /// value, and every value of a type ranked above (or below) it.
    private func range(_ op: String, _ x: QueryExpression, _ operand: DocumentValue) -> QueryExpression {
        let order = ["null", "boolean", "number", "string", "array", "object"]
        let type: String
        switch operand {
        case .null: type = "null"
        case .bool: type = "boolean"
        case .int, .double: type = "number"
        case .string: type = "string"
        case .array: type = "array"
        case .dictionary, .blob: type = "object"
        }
        let rank = order.firstIndex(of: type) ?? 0
        let above = op.hasPrefix("$gt")
        let others = above ? Array(order[(rank + 1)...]) : Array(order[..<rank])
        let sameType: QueryExpression
        if operand == .null {
            // null has one value: only the inclusive forms take it.
            sameType = op.hasSuffix("e") ? .check(x, .null, negated: false) : .literal(false)
        } else {
            let ops: [String: BinaryOperator] = ["$gt": .greater, "$gte": .greaterOrEqual, "$lt": .less, "$lte": .lessOrEqual]
            sameType = .binary(ops[op] ?? .equal, x, .literal(operand))
        }
        guard !others.isEmpty else { return sameType }
        return Self.any([sameType, .inList(.function("TYPE", [x]), others.map { .literal(.string($0)) })])!
    }

    /// True when `e` is true; false when false, null or MISSING (for negations, which must not stay unknown).
    static func truth(_ e: QueryExpression) -> QueryExpression {
        .caseWhen(subject: nil, branches: [CaseBranch(when: e, then: .literal(true))], otherwise: .literal(false))
    }

    static func all(_ terms: [QueryExpression]) -> QueryExpression? {
        guard let first = terms.first else { return nil }
        return terms.dropFirst().reduce(first) { .binary(.and, $0, $1) }
    }

    static func any(_ terms: [QueryExpression]) -> QueryExpression? {
        guard let first = terms.first else { return nil }
        return terms.dropFirst().reduce(first) { .binary(.or, $0, $1) }
    }
}
