import Foundation
@testable import SyncNodeStore

// A deliberately naive, in-memory interpreter of the query AST. It is the
// oracle of the differential query test: every statement the generator makes
// runs both here and through the SQLite compiler, and the results must agree.
// Clarity matters more than speed here; nothing in it is shared with the
// production query path.

/// One stored document as the evaluator sees it.
struct ReferenceDocument: Sendable, Hashable {
    var id: String
    var sequence: Int64
    var body: [String: DocumentValue]
}

/// Why the reference evaluator refused a statement.
struct ReferenceEvaluatorError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// One result row: (column name, value) pairs in SELECT order; nil is MISSING.
typealias ReferenceRow = [(String, DocumentValue?)]

enum ReferenceEvaluator {
    /// Runs `statement` over the documents of its FROM collection.
    ///
    /// Statements with joins need ``run(_:sources:parameters:)``.
    static func run(
        _ statement: SelectStatement, documents: [ReferenceDocument], parameters: [String: DocumentValue]
    ) throws -> [ReferenceRow] {
        guard statement.joins.isEmpty else {
            throw ReferenceEvaluatorError("a statement with joins needs run(_:sources:parameters:)")
        }
        return try run(statement, sources: [try sourceAlias(statement.from): documents], parameters: parameters)
    }

    /// Runs `statement`, reading each FROM/JOIN source from `sources`, keyed by
    /// the source's alias (its `AS` name, else its collection name).
    ///
    /// Joins: an inner join keeps the combinations whose ON condition is true
    /// (no ON: all of them); a left outer join also keeps a left row that
    /// matched nothing, with the right source absent (its properties and
    /// `meta()` are MISSING); a cross join keeps every combination.
    static func run(
        _ statement: SelectStatement, sources: [String: [ReferenceDocument]], parameters: [String: DocumentValue]
    ) throws -> [ReferenceRow] {
        let mainAlias = try sourceAlias(statement.from)
        var aliases = [mainAlias]
        for join in statement.joins {
            let alias = try sourceAlias(join.source)
            guard !aliases.contains(alias) else { throw ReferenceEvaluatorError("two sources are called \(alias)") }
            aliases.append(alias)
        }
        let evaluator = Evaluator(mainAlias: mainAlias, aliases: aliases, parameters: parameters)

        // FROM and JOIN.
        guard let mainDocuments = sources[mainAlias] else {
            throw ReferenceEvaluatorError("no documents given for source \(mainAlias)")
        }
        var rows = mainDocuments.map { Row(documents: [mainAlias: $0]) }
        for (join, alias) in zip(statement.joins, aliases.dropFirst()) {
            guard let documents = sources[alias] else {
                throw ReferenceEvaluatorError("no documents given for source \(alias)")
            }
            rows = try self.join(rows, with: documents, as: alias, join: join, evaluator: evaluator)
        }

        // WHERE.
        if let condition = statement.whereClause {
            rows = try rows.filter { try evaluator.evaluate(condition, in: $0).isTrue }
        }

        // Projection (per row, or per group), with each output's sort keys.
        var outputs: [Output] = []
        if isAggregated(statement) {
            for group in try groups(of: rows, by: statement.groupBy, evaluator: evaluator) {
                let groupEvaluator = evaluator.grouping(group)
                // An empty group (no GROUP BY, no rows) still yields one row; its
                // non-aggregate expressions see no document at all.
                let representative = group.first ?? Row(documents: [:])
                if let having = statement.having {
                    guard try groupEvaluator.evaluate(having, in: representative).isTrue else { continue }
                }
                outputs.append(try output(of: statement, for: representative, evaluator: groupEvaluator))
            }
        } else {
            guard statement.having == nil else {
                throw ReferenceEvaluatorError("HAVING needs GROUP BY or an aggregate")
            }
            outputs = try rows.map { try output(of: statement, for: $0, evaluator: evaluator) }
        }

        // DISTINCT keeps the first of equal rows.
        if statement.distinct {
            var seen = Set<[[UInt8]]>()
            outputs = outputs.filter { seen.insert($0.columns.map(\.1.identityKey)).inserted }
        }

        // ORDER BY (stable: ties keep their order so far).
        if !statement.orderBy.isEmpty {
            let descending = statement.orderBy.map(\.descending)
            outputs = outputs.enumerated().sorted { x, y in
                for (i, isDescending) in descending.enumerated() {
                    let c = RValue.order(x.element.sortKeys[i], y.element.sortKeys[i])
                    if c != 0 { return isDescending ? c > 0 : c < 0 }
                }
                return x.offset < y.offset
            }.map(\.element)
        }

        // OFFSET, LIMIT.
        let empty = Row(documents: [:])
        if let offset = try statement.offset.map({ try count(evaluator.evaluate($0, in: empty), clause: "OFFSET") }) {
            outputs = Array(outputs.dropFirst(max(0, offset)))
        }
        if let limit = try statement.limit.map({ try count(evaluator.evaluate($0, in: empty), clause: "LIMIT") }),
            limit >= 0
        {
            outputs = Array(outputs.prefix(limit))
        }

        return outputs.map { $0.columns.map { ($0.0, $0.1.documentValue) } }
    }

    /// The name of the column `.expression(expression, alias)` produces at
    /// 1-based `position` in the SELECT list: the alias, else the last key of a
    /// property path, else the name of a `meta()` property, else `$position`.
    static func columnName(of expression: QueryExpression, alias: String?, position: Int) -> String {
        if let alias { return alias }
        switch expression {
        case .property(_, let path):
            if case .key(let key)? = path.last { return key }
        case .meta(_, let property):
            return property.rawValue
        default:
            break
        }
        return "$\(position)"
    }

    /// The alias a source goes by: its `AS` name, else its collection's name
    /// (`_` is the default collection, `_default`).
    static func sourceAlias(_ source: SourceSpec) throws -> String {
        if let alias = source.alias { return alias }
        switch source.collection {
        case .named(_, let name): return name == "_" ? "_default" : name
        case .collection(let collection): return collection.name
        }
    }

    // MARK: Helpers for tests comparing results

    /// Compares two result values by the query type order: MISSING (nil) <
    /// null < booleans < numbers < strings < arrays < objects. Returns a
    /// negative number, zero or a positive number.
    static func order(_ a: DocumentValue?, _ b: DocumentValue?) -> Int {
        RValue.order(RValue(a), RValue(b))
    }

    /// Whether two result values are the same: equal types and values, with
    /// numbers compared numerically up to a relative `tolerance` (SQLite and
    /// Swift may sum or divide in a different order), strings byte for byte.
    static func sameValue(_ a: DocumentValue?, _ b: DocumentValue?, tolerance: Double = 1e-9) -> Bool {
        switch (RValue(a), RValue(b)) {
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1, tolerance: tolerance) }
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && x.allSatisfy { key, value in y[key].map { sameValue(value, $0, tolerance: tolerance) } ?? false }
        case (let x, let y):
            if let p = x.number, let q = y.number {
                return p == q || abs(p - q) <= tolerance * max(abs(p), abs(q))
            }
            return RValue.order(x, y) == 0
        }
    }

    /// A canonical text of a row: `name=value` pairs, values as canonical JSON
    /// (integral numbers without a fraction) or `MISSING`. Sorting rows by it
    /// compares result multisets when the order does not matter.
    static func canonicalText(of row: ReferenceRow) -> String {
        row.map { name, value in "\(name)=\(value.map(JSONWriter.string) ?? "MISSING")" }.joined(separator: "\u{1}")
    }
}

// MARK: - Pipeline pieces

extension ReferenceEvaluator {
    /// A combination of documents being queried: source alias → document.
    /// A source with no entry is the unmatched side of a LEFT OUTER JOIN.
    fileprivate struct Row {
        var documents: [String: ReferenceDocument]
    }

    /// One output row before DISTINCT/ORDER BY/LIMIT.
    fileprivate struct Output {
        var columns: [(String, RValue)]
        /// The values of the ORDER BY items, in order.
        var sortKeys: [RValue]
    }

    private static let aggregateFunctions: Set<String> = ["COUNT", "SUM", "AVG", "MIN", "MAX"]

    private static func join(
        _ rows: [Row], with documents: [ReferenceDocument], as alias: String, join: JoinSpec, evaluator: Evaluator
    ) throws -> [Row] {
        var joined: [Row] = []
        for row in rows {
            var matched = false
            for document in documents {
                var candidate = row
                candidate.documents[alias] = document
                if join.kind != .cross, let condition = join.on {
                    guard try evaluator.evaluate(condition, in: candidate).isTrue else { continue }
                }
                joined.append(candidate)
                matched = true
            }
            if !matched, join.kind == .leftOuter { joined.append(row) }
        }
        return joined
    }

    /// Whether the statement groups: it has GROUP BY, or an aggregate in its
    /// SELECT list, HAVING or ORDER BY (not counting ANY/EVERY conditions).
    private static func isAggregated(_ statement: SelectStatement) -> Bool {
        if !statement.groupBy.isEmpty { return true }
        var expressions: [QueryExpression] = statement.results.compactMap {
            if case .expression(let e, _) = $0 { return e }
            return nil
        }
        expressions += statement.having.map { [$0] } ?? []
        expressions += statement.orderBy.map(\.expression)
        return expressions.contains(where: containsAggregate)
    }

    private static func containsAggregate(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .countAll: return true
        case .function(let name, let arguments):
            return aggregateFunctions.contains(name) || arguments.contains(where: containsAggregate)
        case .literal, .missing, .property, .meta, .parameter, .match, .rank: return false
        case .array(let items): return items.contains(where: containsAggregate)
        case .unary(_, let e): return containsAggregate(e)
        case .binary(_, let l, let r): return containsAggregate(l) || containsAggregate(r)
        case .between(let x, let l, let u): return [x, l, u].contains(where: containsAggregate)
        case .inList(let x, let items): return containsAggregate(x) || items.contains(where: containsAggregate)
        case .check(let e, _, _): return containsAggregate(e)
        case .caseWhen(let subject, let branches, let otherwise):
            return (subject.map(containsAggregate) ?? false)
                || branches.contains { containsAggregate($0.when) || containsAggregate($0.then) }
                || (otherwise.map(containsAggregate) ?? false)
        case .quantified(_, _, let collection, _):
            return containsAggregate(collection)
        }
    }

    /// Splits rows into groups of equal GROUP BY values (MISSING, null and
    /// every type kept apart), in order of first appearance. Without GROUP BY
    /// the whole input is one group, even when it is empty.
    private static func groups(of rows: [Row], by keys: [QueryExpression], evaluator: Evaluator) throws -> [[Row]] {
        guard !keys.isEmpty else { return [rows] }
        var groups: [[Row]] = []
        var indexByKey: [[[UInt8]]: Int] = [:]
        for row in rows {
            let key = try keys.map { try evaluator.evaluate($0, in: row).identityKey }
            if let index = indexByKey[key] {
                groups[index].append(row)
            } else {
                indexByKey[key] = groups.count
                groups.append([row])
            }
        }
        return groups
    }

    /// The SELECT columns and ORDER BY keys of one row (or group).
    private static func output(of statement: SelectStatement, for row: Row, evaluator: Evaluator) throws -> Output {
        var columns: [(String, RValue)] = []
        var aliasValues: [String: RValue] = [:]
        for (index, item) in statement.results.enumerated() {
            switch item {
            case .expression(let expression, let alias):
                let value = try evaluator.evaluate(expression, in: row)
                columns.append((columnName(of: expression, alias: alias, position: index + 1), value))
                if let alias, aliasValues[alias] == nil { aliasValues[alias] = value }
            case .all(let source, let alias):
                let sources = source.map { [$0] } ?? evaluator.aliases
                if let source, !evaluator.aliases.contains(source) {
                    throw ReferenceEvaluatorError("unknown source \(source) in \(source).*")
                }
                for source in sources {
                    let value: RValue = row.documents[source].map { .object($0.body) } ?? .missing
                    columns.append((sources.count == 1 ? alias ?? source : source, value))
                    if let alias, sources.count == 1, aliasValues[alias] == nil { aliasValues[alias] = value }
                }
            }
        }
        let sortKeys = try statement.orderBy.map { item -> RValue in
            // A lone name that is a SELECT alias sorts by that column.
            if case .property(nil, let path) = item.expression, path.count == 1, case .key(let name) = path[0],
                let value = aliasValues[name]
            {
                return value
            }
            return try evaluator.evaluate(item.expression, in: row)
        }
        return Output(columns: columns, sortKeys: sortKeys)
    }

    /// A LIMIT or OFFSET value: a number, truncated.
    private static func count(_ value: RValue, clause: String) throws -> Int {
        guard let number = value.number else {
            throw ReferenceEvaluatorError("\(clause) must be a number")
        }
        let truncated = number.rounded(.towardZero)
        if truncated >= Double(Int.max) { return Int.max }
        if truncated <= Double(Int.min) { return Int.min }
        return Int(truncated)
    }
}

// MARK: - Values

/// A value during evaluation: the JSON data model plus MISSING.
///
/// Numbers keep integers exact when they can; an integral double equals the
/// same integer everywhere (comparisons, grouping, DISTINCT, results).
enum RValue: Sendable {
    case missing
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([DocumentValue])
    case object([String: DocumentValue])

    /// The kinds of value, in the query type order.
    enum TypeClass: Int, Comparable {
        case missing, null, boolean, number, string, array, object

        static func < (a: TypeClass, b: TypeClass) -> Bool { a.rawValue < b.rawValue }
    }

    init(_ value: DocumentValue?) {
        guard let value else { self = .missing; return }
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a)
        case .dictionary(let d): self = .object(d)
        case .blob(let b): self = .object(b.metadata)  // a blob is its metadata object
        }
    }

    /// A computed number; not finite (overflow, NaN) is NULL, as JSON has no such number.
    static func number(_ d: Double) -> RValue { d.isFinite ? .double(d) : .null }

    /// The value as a result value; nil for MISSING. Integral doubles become integers.
    var documentValue: DocumentValue? {
        switch self {
        case .missing: return nil
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return (try? DocumentValue.number(d)) ?? .null
        case .string(let s): return .string(s)
        case .array(let a): return .array(a)
        case .object(let o): return .dictionary(o)
        }
    }

    var typeClass: TypeClass {
        switch self {
        case .missing: return .missing
        case .null: return .null
        case .bool: return .boolean
        case .int, .double: return .number
        case .string: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    var isMissing: Bool { typeClass == .missing }
    var isNull: Bool { typeClass == .null }

    /// The numeric value of a number; nil for anything else (booleans included).
    var number: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value at `path` inside this one: a key reads an object's member, an
    /// index an array's element; anything else (a missing member, an index out
    /// of range or negative, a key on a non-object...) is MISSING.
    func applying(_ path: ArraySlice<PathComponent>) -> RValue {
        var value = self
        for component in path {
            switch (component, value) {
            case (.key(let key), .object(let object)):
                value = RValue(object[key])
            case (.index(let index), .array(let array)) where array.indices.contains(index):
                value = RValue(array[index])
            default:
                return .missing
            }
        }
        return value
    }

    /// Bytes that are equal exactly when two values are equal by type and
    /// value: canonical JSON (which writes `2.0` as `2`), or a marker for
    /// MISSING. Used for GROUP BY and DISTINCT.
    var identityKey: [UInt8] {
        guard let value = documentValue else { return Array("MISSING".utf8) }  // never valid JSON
        return Array(JSONWriter.string(value).utf8)
    }

    /// The total query order: by type class, then within the class. Strings
    /// compare by UTF-8 bytes; arrays and objects by their canonical JSON bytes.
    static func order(_ a: RValue, _ b: RValue) -> Int {
        let (ca, cb) = (a.typeClass, b.typeClass)
        if ca != cb { return ca < cb ? -1 : 1 }
        switch (a, b) {
        case (.bool(let x), .bool(let y)):
            return x == y ? 0 : (x ? 1 : -1)
        case (.int(let x), .int(let y)):
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)):
            return compareBytes(x.utf8, y.utf8)
        case (.array, .array), (.object, .object):
            let (x, y) = (a.documentValue!, b.documentValue!)
            return compareBytes(JSONWriter.string(x).utf8, JSONWriter.string(y).utf8)
        default:
            guard let x = a.number, let y = b.number else { return 0 }  // MISSING/MISSING, null/null
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    private static func compareBytes<A: Sequence<UInt8>, B: Sequence<UInt8>>(_ a: A, _ b: B) -> Int {
        var (ia, ib) = (a.makeIterator(), b.makeIterator())
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }
}

// MARK: Three-valued logic

extension RValue {
    /// The logical value: `.bool`, `.null` or `.missing`. Numbers are true
    /// unless 0; strings, arrays and objects are true.
    var truth: RValue {
        switch self {
        case .missing, .null, .bool: return self
        case .int(let i): return .bool(i != 0)
        case .double(let d): return .bool(d != 0)
        case .string, .array, .object: return .bool(true)
        }
    }

    /// Whether the value counts as true (WHERE, HAVING, CASE WHEN, SATISFIES).
    var isTrue: Bool {
        if case .bool(true) = truth { return true }
        return false
    }

    private var isFalse: Bool {
        if case .bool(false) = truth { return true }
        return false
    }

    static func and(_ a: RValue, _ b: RValue) -> RValue {
        if a.isFalse || b.isFalse { return .bool(false) }
        if a.isMissing || b.isMissing { return .missing }
        if a.isNull || b.isNull { return .null }
        return .bool(true)
    }

    static func or(_ a: RValue, _ b: RValue) -> RValue {
        if a.isTrue || b.isTrue { return .bool(true) }
        if a.isMissing || b.isMissing { return .missing }
        if a.isNull || b.isNull { return .null }
        return .bool(false)
    }

    static func not(_ a: RValue) -> RValue {
        switch a.truth {
        case .bool(let b): return .bool(!b)
        case let other: return other  // MISSING, NULL
        }
    }
}

// MARK: - Expressions

private struct Evaluator {
    typealias Row = ReferenceEvaluator.Row

    /// The FROM source's alias; paths that name no variable or source read it.
    let mainAlias: String
    /// Every source alias, FROM first.
    let aliases: [String]
    let parameters: [String: DocumentValue]
    /// ANY/EVERY variables in scope, innermost last.
    var variables: [(name: String, value: RValue)] = []
    /// The rows of the group being output; nil where aggregates are not allowed.
    var group: [Row]?

    init(mainAlias: String, aliases: [String], parameters: [String: DocumentValue]) {
        self.mainAlias = mainAlias
        self.aliases = aliases
        self.parameters = parameters
    }

    /// This evaluator, with aggregates computed over `rows`.
    func grouping(_ rows: [Row]) -> Evaluator {
        var copy = self
        copy.group = rows
        return copy
    }

    func evaluate(_ expression: QueryExpression, in row: Row) throws -> RValue {
        switch expression {
        case .literal(let value):
            return RValue(value)
        case .missing:
            return .missing
        case .parameter(let name):
            return RValue(parameters[name])
        case .property(let source, let path):
            return try property(source: source, path: path, in: row)
        case .meta(let source, let property):
            let alias = source ?? mainAlias
            guard aliases.contains(alias) else { throw ReferenceEvaluatorError("unknown source \(alias) in meta()") }
            guard let document = row.documents[alias] else { return .missing }
            switch property {
            case .id: return .string(document.id)
            case .sequence: return .int(document.sequence)
            case .deleted: return .bool(false)
            case .revisionID, .expiration: return .missing  // not modelled; the generator never asks
            }
        case .array(let items):
            return .array(try items.map { try evaluate($0, in: row).documentValue ?? .null })
        case .unary(.not, let operand):
            return RValue.not(try evaluate(operand, in: row))
        case .unary(.negate, let operand):
            return Self.negate(try evaluate(operand, in: row))
        case .binary(let op, let left, let right):
            return Self.binary(op, try evaluate(left, in: row), try evaluate(right, in: row))
        case .between(let value, let lower, let upper):
            let x = try evaluate(value, in: row)
            return RValue.and(
                Self.compare(.greaterOrEqual, x, try evaluate(lower, in: row)),
                Self.compare(.lessOrEqual, x, try evaluate(upper, in: row)))
        case .inList(let value, let items):
            let x = try evaluate(value, in: row)
            return try items.reduce(RValue.bool(false)) { result, item in
                RValue.or(result, Self.compare(.equal, x, try evaluate(item, in: row)))
            }
        case .check(let operand, let check, let negated):
            let value = try evaluate(operand, in: row)
            let holds: Bool
            switch check {
            case .null: holds = value.isNull
            case .missing: holds = value.isMissing
            case .valued: holds = !value.isNull && !value.isMissing
            }
            return .bool(holds != negated)
        case .countAll:
            guard let group else { throw ReferenceEvaluatorError("COUNT(*) is only allowed in a grouped result") }
            return .int(Int64(group.count))
        case .function(let name, let arguments):
            if ["COUNT", "SUM", "AVG", "MIN", "MAX"].contains(name) {
                return try aggregate(name, arguments)
            }
            return try Functions.call(name, try arguments.map { try evaluate($0, in: row) })
        case .caseWhen(let subject, let branches, let otherwise):
            let subjectValue = try subject.map { try evaluate($0, in: row) }
            for branch in branches {
                let condition = try evaluate(branch.when, in: row)
                let taken = subjectValue.map { Self.compare(.equal, $0, condition).isTrue } ?? condition.isTrue
                if taken { return try evaluate(branch.then, in: row) }
            }
            return try otherwise.map { try evaluate($0, in: row) } ?? .null
        case .quantified(let quantifier, let variable, let collection, let condition):
            let elements: [DocumentValue]
            switch try evaluate(collection, in: row) {
            case .missing: return .missing
            case .array(let a): elements = a
            default: return .null
            }
            var scope = self
            scope.variables.append((variable, .missing))
            let satisfied = try elements.map { element in
                scope.variables[scope.variables.count - 1].value = RValue(element)
                return try scope.evaluate(condition, in: row).isTrue
            }
            switch quantifier {
            case .any: return .bool(satisfied.contains(true))
            case .every: return .bool(!satisfied.contains(false))
            }
        case .match, .rank:
            throw ReferenceEvaluatorError("full-text search (MATCH/RANK) is not supported")
        }
    }

    /// Resolves a property: a bound variable first (innermost), then a source
    /// alias, otherwise a path in the FROM source's body.
    private func property(source: String?, path: [PathComponent], in row: Row) throws -> RValue {
        if let source {
            guard aliases.contains(source) else { throw ReferenceEvaluatorError("unknown source \(source)") }
            return body(of: source, in: row).applying(path[...])
        }
        guard case .key(let first)? = path.first else {
            throw ReferenceEvaluatorError("a property path must start with a name")
        }
        if let variable = variables.last(where: { $0.name == first }) {
            return variable.value.applying(path.dropFirst())
        }
        if aliases.contains(first) {
            return body(of: first, in: row).applying(path.dropFirst())
        }
        return body(of: mainAlias, in: row).applying(path[...])
    }

    private func body(of alias: String, in row: Row) -> RValue {
        row.documents[alias].map { .object($0.body) } ?? .missing
    }

    // MARK: Aggregates

    private func aggregate(_ name: String, _ arguments: [QueryExpression]) throws -> RValue {
        guard let group else { throw ReferenceEvaluatorError("\(name)() is only allowed in a grouped result") }
        guard arguments.count == 1 else { throw ReferenceEvaluatorError("\(name)() takes one argument") }
        var inner = self
        inner.group = nil  // no aggregate inside an aggregate
        let values = try group.map { try inner.evaluate(arguments[0], in: $0) }
        let valued = values.filter { !$0.isMissing && !$0.isNull }
        switch name {
        case "COUNT":
            return .int(Int64(valued.count))
        case "SUM", "AVG":
            let numbers = valued.filter { $0.typeClass == .number }
            guard !numbers.isEmpty else { return .null }
            var sum: RValue = .int(0)
            for n in numbers { sum = Self.arithmetic(.add, sum, n) }
            guard let total = sum.number else { return .null }  // overflowed to infinity
            return name == "SUM" ? sum : RValue.number(total / Double(numbers.count))
        case "MIN":
            return valued.min { RValue.order($0, $1) < 0 } ?? .null
        default:  // MAX
            return valued.max { RValue.order($0, $1) < 0 } ?? .null
        }
    }

    // MARK: Operators

    static func binary(_ op: BinaryOperator, _ a: RValue, _ b: RValue) -> RValue {
        switch op {
        case .and: return RValue.and(a, b)
        case .or: return RValue.or(a, b)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual: return compare(op, a, b)
        case .add, .subtract, .multiply, .divide, .modulo: return arithmetic(op, a, b)
        case .concat:
            if a.isMissing || b.isMissing { return .missing }
            guard let x = a.string, let y = b.string else { return .null }
            return .string(x + y)
        case .like:
            if a.isMissing || b.isMissing { return .missing }
            guard let text = a.string, let pattern = b.string else { return .null }
            return .bool(Functions.like(text, pattern))
        }
    }

    /// `= < <= > >=` and `!=` (which is `NOT =`): MISSING, then NULL, propagate;
    /// values of different type classes are never equal nor ordered.
    static func compare(_ op: BinaryOperator, _ a: RValue, _ b: RValue) -> RValue {
        if op == .notEqual { return RValue.not(compare(.equal, a, b)) }
        if a.isMissing || b.isMissing { return .missing }
        if a.isNull || b.isNull { return .null }
        guard a.typeClass == b.typeClass else { return .bool(false) }
        let c = RValue.order(a, b)
        switch op {
        case .equal: return .bool(c == 0)
        case .less: return .bool(c < 0)
        case .lessOrEqual: return .bool(c <= 0)
        case .greater: return .bool(c > 0)
        default: return .bool(c >= 0)
        }
    }

    /// `+ - * / %`: MISSING, then NULL (any non-number, booleans included)
    /// propagate. Integers stay exact unless they overflow; `/` is real
    /// division; `%` truncates both sides to integers.
    static func arithmetic(_ op: BinaryOperator, _ a: RValue, _ b: RValue) -> RValue {
        if a.isMissing || b.isMissing { return .missing }
        guard let x = a.number, let y = b.number else { return .null }
        switch op {
        case .divide:
            return y == 0 ? .null : RValue.number(x / y)
        case .modulo:
            guard let i = Functions.truncatedInteger(x), let j = Functions.truncatedInteger(y), j != 0 else {
                return .null
            }
            return .int(i.remainderReportingOverflow(dividingBy: j).partialValue)  // Int64.min % -1 is 0
        default:
            break
        }
        if case .int(let i) = a, case .int(let j) = b {
            let (result, overflow): (Int64, Bool)
            switch op {
            case .add: (result, overflow) = i.addingReportingOverflow(j)
            case .subtract: (result, overflow) = i.subtractingReportingOverflow(j)
            default: (result, overflow) = i.multipliedReportingOverflow(by: j)
            }
            if !overflow { return .int(result) }
        }
        switch op {
        case .add: return RValue.number(x + y)
        case .subtract: return RValue.number(x - y)
        default: return RValue.number(x * y)
        }
    }

    static func negate(_ a: RValue) -> RValue {
        switch a {
        case .missing: return .missing
        case .int(let i) where i != .min: return .int(-i)
        case .int, .double: return RValue.number(-a.number!)
        default: return .null
        }
    }
}

// MARK: - Functions

private enum Functions {
    /// Calls a non-aggregate function on evaluated arguments.
    ///
    /// After the arity check: MISSING if any argument is MISSING, else NULL if
    /// any is null or not of the type the function takes.
    static func call(_ name: String, _ arguments: [RValue]) throws -> RValue {
        guard let arity = arities[name] else { throw ReferenceEvaluatorError("unknown function \(name)()") }
        guard arity.contains(arguments.count) else {
            throw ReferenceEvaluatorError("\(name)() does not take \(arguments.count) argument(s)")
        }
        if name == "TYPE" {
            switch arguments[0] {
            case .missing: return .string("missing")
            case .null: return .string("null")
            case .bool: return .string("boolean")
            case .int, .double: return .string("number")
            case .string: return .string("string")
            case .array: return .string("array")
            case .object: return .string("object")
            }
        }
        if arguments.contains(where: \.isMissing) { return .missing }
        if arguments.contains(where: \.isNull) { return .null }

        switch name {
        case "LOWER", "UPPER", "LENGTH", "TRIM", "LTRIM", "RTRIM":
            guard let s = arguments[0].string else { return .null }
            switch name {
            case "LOWER": return .string(s.lowercased())
            case "UPPER": return .string(s.uppercased())
            case "LENGTH": return .int(Int64(s.unicodeScalars.count))
            default: return .string(trim(s, leading: name != "RTRIM", trailing: name != "LTRIM"))
            }
        case "CONTAINS":
            guard let s = arguments[0].string, let t = arguments[1].string else { return .null }
            return .bool(containsBytes(Array(s.utf8), Array(t.utf8)))
        case "ARRAY_LENGTH":
            guard case .array(let a) = arguments[0] else { return .null }
            return .int(Int64(a.count))
        case "ARRAY_CONTAINS":
            guard case .array(let a) = arguments[0] else { return .null }
            return .bool(a.contains { Evaluator.compare(.equal, RValue($0), arguments[1]).isTrue })
        case "PI":
            return .double(.pi)
        case "E":
            return .double(exp(1))
        default:
            let numbers = arguments.compactMap(\.number)
            guard numbers.count == arguments.count else { return .null }
            return numeric(name, arguments[0], numbers)
        }
    }

    private static let arities: [String: ClosedRange<Int>] = [
        "LOWER": 1...1, "UPPER": 1...1, "LENGTH": 1...1, "TRIM": 1...1, "LTRIM": 1...1, "RTRIM": 1...1,
        "CONTAINS": 2...2, "ARRAY_LENGTH": 1...1, "ARRAY_CONTAINS": 2...2, "TYPE": 1...1,
        "ABS": 1...1, "CEIL": 1...1, "FLOOR": 1...1, "ROUND": 1...2, "TRUNC": 1...1, "SIGN": 1...1,
        "SQRT": 1...1, "EXP": 1...1, "LN": 1...1, "LOG": 1...1, "POWER": 2...2,
        "SIN": 1...1, "COS": 1...1, "TAN": 1...1, "PI": 0...0, "E": 0...0,
    ]

    /// The numeric functions; `first` is the first argument as given (to keep integers exact).
    private static func numeric(_ name: String, _ first: RValue, _ x: [Double]) -> RValue {
        switch name {
        case "ABS":
            if case .int(let i) = first, i != .min { return .int(abs(i)) }
            return RValue.number(abs(x[0]))
        case "CEIL": return rounded(first, x[0], .up)
        case "FLOOR": return rounded(first, x[0], .down)
        case "ROUND":
            return x.count == 2 ? rounded(x[0], digits: x[1], .toNearestOrAwayFromZero)
                : rounded(first, x[0], .toNearestOrAwayFromZero)
        case "TRUNC":
            return rounded(first, x[0], .towardZero)
        case "SIGN": return .int(x[0] > 0 ? 1 : x[0] < 0 ? -1 : 0)
        case "SQRT": return x[0] < 0 ? .null : RValue.number(x[0].squareRoot())
        case "EXP": return RValue.number(exp(x[0]))
        case "LN": return x[0] <= 0 ? .null : RValue.number(log(x[0]))
        case "LOG": return x[0] <= 0 ? .null : RValue.number(log10(x[0]))
        case "POWER": return RValue.number(pow(x[0], x[1]))  // NaN (e.g. (-8)^0.5) and overflow are NULL
        case "SIN": return RValue.number(sin(x[0]))
        case "COS": return RValue.number(cos(x[0]))
        default: return RValue.number(tan(x[0]))  // TAN
        }
    }

    /// Rounds to an integer; integers are already there.
    private static func rounded(_ value: RValue, _ x: Double, _ rule: FloatingPointRoundingRule) -> RValue {
        if case .int = value { return value }
        return RValue.number(x.rounded(rule))
    }

    /// Rounds to `digits` (truncated) decimal places: `(x * 10^d).rounded() / 10^d`
    /// for d >= 0, `(x / 10^-d).rounded() * 10^-d` for d < 0. Beyond ±15 places
    /// a double has nothing to round (d > 15: x unchanged; d < -15: 0).
    private static func rounded(_ x: Double, digits: Double, _ rule: FloatingPointRoundingRule) -> RValue {
        let d = digits.rounded(.towardZero)
        if d > 15 { return RValue.number(x) }
        if d < -15 { return .int(0) }
        if d >= 0 {
            let scale = pow(10, d)
            return RValue.number((x * scale).rounded(rule) / scale)
        }
        let scale = pow(10, -d)
        return RValue.number((x / scale).rounded(rule) * scale)
    }

    /// A number truncated toward zero, when it fits in 64 bits.
    static func truncatedInteger(_ x: Double) -> Int64? {
        Int64(exactly: x.rounded(.towardZero))
    }

    /// Removes spaces, tabs, line feeds and carriage returns at the chosen ends.
    private static func trim(_ s: String, leading: Bool, trailing: Bool) -> String {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        var bytes = Array(s.utf8)[...]
        while leading, let b = bytes.first, whitespace.contains(b) { bytes.removeFirst() }
        while trailing, let b = bytes.last, whitespace.contains(b) { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)  // only ASCII was cut: still valid UTF-8
    }

    private static func containsBytes(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// SQL LIKE: `%` matches any run of characters, `_` exactly one Unicode
    /// scalar, `\` makes the next character literal (a trailing `\` is a
    /// literal backslash). ASCII letters match either case; nothing else folds.
    static func like(_ text: String, _ pattern: String) -> Bool {
        enum Token { case anyRun, one, scalar(UInt32) }
        func fold(_ s: Unicode.Scalar) -> UInt32 {
            (0x41...0x5A).contains(s.value) ? s.value + 0x20 : s.value
        }
        var tokens: [Token] = []
        var iterator = pattern.unicodeScalars.makeIterator()
        while let s = iterator.next() {
            switch s {
            case "%": tokens.append(.anyRun)
            case "_": tokens.append(.one)
            case "\\": tokens.append(.scalar(fold(iterator.next() ?? "\\")))
            default: tokens.append(.scalar(fold(s)))
            }
        }
        let scalars = text.unicodeScalars.map(fold)
        // matches[j]: whether the tokens so far match the first j scalars.
        var matches = [true] + Array(repeating: false, count: scalars.count)
        for token in tokens {
            var next = Array(repeating: false, count: scalars.count + 1)
            for j in 0...scalars.count {
                switch token {
                case .anyRun: next[j] = matches[j] || (j > 0 && next[j - 1])
                case .one: next[j] = j > 0 && matches[j - 1]
                case .scalar(let c): next[j] = j > 0 && matches[j - 1] && scalars[j - 1] == c
                }
            }
            matches = next
        }
        return matches[scalars.count]
    }
}
