import Foundation
@testable import SyncNodeStore

/// Random document bodies and SELECT statements for the differential query
/// test, which runs each statement through the SQL++ parser and the SQLite
/// compiler and compares the rows with ``ReferenceEvaluator``.
///
/// Everything is drawn from one seeded generator, so a failing case replays
/// from its seed. The statements stay inside what both sides define exactly:
/// one collection, no full-text search, no revision IDs or expirations, small
/// numbers, and LIMIT/OFFSET only under a total ORDER BY.
///
/// A statement's AST is exactly what a faithful parser returns for its
/// ``render(_:)`` text, so a test can also check `parse(render(s)) == s`.
struct QueryGenerator {
    /// The collection every statement reads.
    static let collectionName = "docs"
    /// The property names document bodies use.
    static let propertyNames = ["a", "b", "c", "n", "s", "tags", "obj"]
    /// The query parameters statements use (`$p1`, `$p2`); see ``parameters()``.
    static let parameterNames = ["p1", "p2"]

    /// The ID statements expect the `index`th test document to have: they
    /// compare `meta().id` with `doc0` ... `doc30`.
    static func documentID(_ index: Int) -> String { "doc\(index)" }

    /// The deepest nesting of compound expressions. Every generating function
    /// takes the `depth` at which the node it returns sits; its operands sit at
    /// `depth + 1`, and at `maxDepth` only atoms (names, constants) remain.
    private static let maxDepth = 4

    private var random: SeededRandom
    /// The FROM alias of the statement being generated (`d`), if any.
    private var sourceAlias: String?
    /// The ANY/EVERY variables bound where the expression being generated sits, innermost last.
    private var variables: [String] = []

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    // MARK: Vocabulary

    /// Document strings: mixed case, spaces, accents (precomposed and
    /// decomposed "Café"), LIKE wildcards, a quote, a backslash, digits.
    private static let words: [String] = [
        "", "a", "A", "apple", "Apple", "APPLE", "banana", "Banana split", "cherry", "Café", "cafe", "CAFÉ",
        "Cafe\u{301}", "naïve", "straße", "hello world", " padded ", "\ttabbed\r\n", "x_y", "50%", "it's",
        "back\\slash", "10", "9", "red", "Red", "blue", "zeta", "Zeta", "über", "日本",
    ]

    /// Array elements: a few words that repeat, so ANY and ARRAY_CONTAINS find them.
    private static let tagWords = ["red", "Red", "blue", "green", "x_y", "50%"]

    /// Strings written into queries: the document words without control characters.
    private static let literalWords = words.filter { $0.unicodeScalars.allSatisfy { $0.value >= 0x20 } }

    /// Where values of each kind usually live in the generated documents.
    private enum Kind: CaseIterable { case number, string, array, any }

    private static let pathsByKind: [Kind: [String]] = [
        .number: ["n", "n", "a", "b", "c", "obj.n", "obj.a", "tags[0]"],
        .string: ["s", "s", "a", "c", "obj.s", "tags[0]", "tags[1]"],
        .array: ["tags", "tags", "a", "obj.tags", "tags[3]"],
        .any: ["a", "b", "c", "n", "s", "tags", "obj", "obj.a", "obj.s", "obj.tags[0]", "tags[2]", "obj.zz"],
    ]

    // MARK: Documents

    /// A random document body: each of ``propertyNames`` is MISSING about one
    /// time in five, else a value of mostly its usual type ("n" a number, "s"
    /// a string, "tags" an array, "obj" an object) and sometimes of any type.
    mutating func documentBody() -> [String: DocumentValue] {
        var body: [String: DocumentValue] = [:]
        for key in Self.propertyNames where !chance(0.2) {
            body[key] = value(forProperty: key)
        }
        return body
    }

    /// Values for ``parameterNames``, each sometimes absent (MISSING).
    mutating func parameters() -> [String: DocumentValue] {
        var parameters: [String: DocumentValue] = [:]
        for name in Self.parameterNames where !chance(0.1) {
            switch weighted([8, 1, 1]) {
            case 0: parameters[name] = scalarValue()
            case 1: parameters[name] = tagArray(depth: 1)
            default: parameters[name] = objectValue(depth: 1)
            }
        }
        return parameters
    }

    private mutating func value(forProperty key: String) -> DocumentValue {
        let usual = chance(0.7)
        switch key {
        case "n" where usual: return chance(0.6) ? smallInteger() : fraction()
        case "s" where usual: return .string(pick(Self.words))
        case "tags" where usual: return tagArray(depth: 1)
        case "obj" where usual: return objectValue(depth: 1)
        default: return anyValue(depth: 1)
        }
    }

    private mutating func smallInteger() -> DocumentValue {
        .int(Int64(int(-5...20)))
    }

    /// A number with a fraction of .25, .5 or .75: exact in binary, so sums
    /// do not depend on the order of the additions.
    private mutating func fraction() -> DocumentValue {
        .double(Double(int(-5...19)) + Double(int(1...3)) / 4)
    }

    private mutating func scalarValue() -> DocumentValue {
        switch weighted([1, 2, 4, 3, 4]) {
        case 0: return .null
        case 1: return .bool(chance(0.5))
        case 2: return smallInteger()
        case 3: return fraction()
        default: return .string(pick(Self.words))
        }
    }

    /// Mostly a scalar; below depth 3 sometimes an array or object.
    private mutating func anyValue(depth: Int) -> DocumentValue {
        guard depth < 3 else { return scalarValue() }
        switch weighted([16, 2, 2]) {
        case 0: return scalarValue()
        case 1: return arrayValue(depth: depth)
        default: return objectValue(depth: depth)
        }
    }

    private mutating func arrayValue(depth: Int) -> DocumentValue {
        let count = int(0...4)
        var elements: [DocumentValue] = []
        for _ in 0..<count { elements.append(chance(0.85) ? scalarValue() : anyValue(depth: depth + 1)) }
        return .array(elements)
    }

    /// An array of mostly repeating words and small integers.
    private mutating func tagArray(depth: Int) -> DocumentValue {
        let count = int(0...4)
        var elements: [DocumentValue] = []
        for _ in 0..<count {
            switch weighted([6, 2, 1, 1]) {
            case 0: elements.append(.string(pick(Self.tagWords)))
            case 1: elements.append(smallInteger())
            case 2: elements.append(scalarValue())
            default: elements.append(anyValue(depth: depth + 1))
            }
        }
        return .array(elements)
    }

    /// An object with some of the top-level property names (never "obj").
    private mutating func objectValue(depth: Int) -> DocumentValue {
        var object: [String: DocumentValue] = [:]
        for key in ["a", "b", "c", "n", "s", "tags"] where chance(0.5) {
            switch key {
            case "n": object[key] = chance(0.7) ? smallInteger() : fraction()
            case "s": object[key] = .string(pick(Self.words))
            case "tags": object[key] = depth < 3 ? tagArray(depth: depth + 1) : scalarValue()
            default: object[key] = anyValue(depth: depth + 1)
            }
        }
        return .dictionary(object)
    }

    // MARK: Statements

    /// A random statement over ``collectionName``: plain (most), grouped, or
    /// aggregating the whole input into one row.
    mutating func statement() -> SelectStatement {
        sourceAlias = chance(0.3) ? "d" : nil
        variables = []
        switch weighted([60, 28, 12]) {
        case 0: return plainStatement()
        case 1: return groupedStatement()
        default: return aggregateStatement()
        }
    }

    private var source: SourceSpec {
        SourceSpec(collection: .named(scope: nil, name: Self.collectionName), alias: sourceAlias)
    }

    /// The name the statement calls its source by.
    private var aliasName: String { sourceAlias ?? Self.collectionName }

    private mutating func plainStatement() -> SelectStatement {
        var results: [SelectItem] = []
        if chance(0.15) { results.append(.all(source: starSource(), alias: nil)) }
        if results.isEmpty || chance(0.3) {
            for _ in 0..<int(1...4) { results.append(.expression(projection(), alias: columnAlias())) }
        }
        var statement = SelectStatement(results: uniquelyNamed(results), from: source)
        statement.distinct = chance(0.15)
        if chance(0.8) { statement.whereClause = condition(depth: 0) }
        if chance(0.5) {
            statement.orderBy = orderItems(results: statement.results, projectedOnly: statement.distinct, groupKeys: nil)
            // Document IDs are unique, so a final meta().id makes the order total.
            if !statement.distinct, chance(0.5) {
                statement.orderBy.append(OrderItem(expression: meta(.id), descending: chance(0.3)))
                limitAndOffset(&statement)
            }
        }
        return statement
    }

    private mutating func groupedStatement() -> SelectStatement {
        var keys: [QueryExpression] = []
        for _ in 0..<int(1...2) {
            let key = groupKey()
            if !keys.contains(key) { keys.append(key) }
        }
        var results: [SelectItem] = []
        for key in keys where chance(0.75) { results.append(.expression(key, alias: columnAlias())) }
        for _ in 0..<int(1...3) { results.append(.expression(aggregate(depth: 0), alias: columnAlias())) }
        var statement = SelectStatement(results: uniquelyNamed(results), from: source)
        statement.groupBy = keys
        statement.distinct = chance(0.1)
        if chance(0.6) { statement.whereClause = condition(depth: 0) }
        if chance(0.35) { statement.having = havingCondition(keys: keys, depth: 0) }
        if chance(0.5) {
            statement.orderBy = orderItems(results: statement.results, projectedOnly: statement.distinct, groupKeys: keys)
            // Each group has its own key values, so ordering by all keys is total
            // (unless a key's name is also the name of another column).
            let keysSortThemselves = keys.allSatisfy {
                sortsByItself($0, results: statement.results) && !isAmbiguous($0, results: statement.results)
            }
            if !statement.distinct, keysSortThemselves, chance(0.5) {
                statement.orderBy += keys.map { OrderItem(expression: $0, descending: chance(0.3)) }
                limitAndOffset(&statement)
            }
        }
        return statement
    }

    /// Aggregates without GROUP BY: exactly one row (or none, after HAVING/LIMIT/OFFSET).
    private mutating func aggregateStatement() -> SelectStatement {
        var results: [SelectItem] = []
        for _ in 0..<int(1...3) { results.append(.expression(aggregate(depth: 0), alias: columnAlias())) }
        var statement = SelectStatement(results: uniquelyNamed(results), from: source)
        if chance(0.7) { statement.whereClause = condition(depth: 0) }
        if chance(0.2) { statement.having = havingCondition(keys: [], depth: 0) }
        if chance(0.15) { statement.orderBy = [OrderItem(expression: aggregate(depth: 0), descending: chance(0.5))] }
        if chance(0.2) {
            statement.limit = intLiteral(0...2)
            if chance(0.3) { statement.offset = intLiteral(0...1) }
        }
        return statement
    }

    /// `*` as `*`, or sometimes `alias.*`.
    private mutating func starSource() -> String? {
        if let sourceAlias { return chance(0.5) ? sourceAlias : nil }
        return chance(0.2) ? Self.collectionName : nil
    }

    private mutating func projection() -> QueryExpression {
        switch weighted([5, 2, 6]) {
        case 0: return property(.any)
        case 1: return meta(chance(0.5) ? .id : .sequence)
        default: return value(depth: 1)
        }
    }

    /// Sometimes an alias: mostly `r1`...`r9`, now and then a property name
    /// (which ORDER BY then means instead of the property).
    private mutating func columnAlias() -> String? {
        guard chance(0.35) else { return nil }
        return chance(0.15) ? pick(Self.propertyNames) : "r\(int(1...9))"
    }

    /// Renames items whose column name is already taken, so every column of a
    /// row has its own name.
    private func uniquelyNamed(_ items: [SelectItem]) -> [SelectItem] {
        var used = Set<String>()
        var fresh = 0
        return items.enumerated().map { index, item in
            switch item {
            case .all(let source, let alias):
                used.insert(alias ?? source ?? aliasName)
                return item
            case .expression(let expression, let alias):
                var name = ReferenceEvaluator.columnName(of: expression, alias: alias, position: index + 1)
                guard used.contains(name) else {
                    used.insert(name)
                    return item
                }
                repeat {
                    fresh += 1
                    name = "c\(fresh)"
                } while used.contains(name)
                used.insert(name)
                return .expression(expression, alias: name)
            }
        }
    }

    /// One or two ORDER BY items: SELECT aliases, projected expressions, and
    /// (unless `projectedOnly`, as DISTINCT needs) other expressions: group keys
    /// and aggregates when `groupKeys` is given, anything otherwise.
    private mutating func orderItems(results: [SelectItem], projectedOnly: Bool, groupKeys: [QueryExpression]?) -> [OrderItem] {
        var aliases: [String] = []
        var projected: [QueryExpression] = []
        for case .expression(let expression, let alias) in results {
            projected.append(expression)
            if let alias { aliases.append(alias) }
        }
        var items: [OrderItem] = []
        for _ in 0..<int(1...2) {
            let expression: QueryExpression
            let choice = weighted([3, 3, projectedOnly ? 0 : 4])
            if choice == 0, !aliases.isEmpty {
                expression = .property(source: nil, path: [.key(pick(aliases))])
            } else if choice <= 1, !projected.isEmpty {
                expression = pick(projected)
            } else if projectedOnly {
                continue
            } else if let groupKeys {
                expression = !groupKeys.isEmpty && chance(0.5) ? pick(groupKeys) : aggregate(depth: 0)
            } else {
                expression = value(depth: 2)
            }
            if isAmbiguous(expression, results: results) { continue }
            items.append(OrderItem(expression: expression, descending: chance(0.4)))
        }
        return items
    }

    /// Whether an ORDER BY expression is a lone name that is an implicit column
    /// name of another expression (`SELECT obj.a ... ORDER BY a`): only explicit
    /// aliases are looked up, but an implementation could reasonably differ.
    private func isAmbiguous(_ expression: QueryExpression, results: [SelectItem]) -> Bool {
        guard case .property(nil, let path) = expression, path.count == 1, case .key(let name) = path[0] else {
            return false
        }
        var ambiguous = false
        for (index, item) in results.enumerated() {
            guard case .expression(let other, let alias) = item else { continue }
            if alias == name { return false }  // an explicit alias: well defined
            if alias == nil, other != expression,
                ReferenceEvaluator.columnName(of: other, alias: nil, position: index + 1) == name
            {
                ambiguous = true
            }
        }
        return ambiguous
    }

    /// Whether ORDER BY `expression` sorts by the expression itself, not by a
    /// SELECT item another expression that took its name as an alias.
    private func sortsByItself(_ expression: QueryExpression, results: [SelectItem]) -> Bool {
        guard case .property(nil, let path) = expression, path.count == 1, case .key(let name) = path[0] else {
            return true
        }
        for case .expression(let other, let alias) in results where alias == name {
            return other == expression
        }
        return true
    }

    private mutating func limitAndOffset(_ statement: inout SelectStatement) {
        if chance(0.9) {
            switch weighted([12, 1, 2, 1]) {
            case 0: statement.limit = intLiteral(0...8)
            case 1: statement.limit = .literal(.int(-1))  // no limit
            case 2: statement.limit = .binary(.add, intLiteral(0...3), intLiteral(0...3))
            default: statement.limit = .literal(.double(2.5))  // truncated to 2
            }
        }
        if statement.limit == nil || chance(0.4) { statement.offset = intLiteral(0...5) }
    }

    // MARK: Grouping

    private mutating func groupKey() -> QueryExpression {
        switch weighted([8, 1, 1, 1]) {
        case 0: return property(pick(Kind.allCases))
        case 1: return .function("LOWER", [property(.string)])
        case 2: return .binary(.modulo, property(.number), intLiteral(2...4))
        default: return .binary(.greater, property(.number), intLiteral(0...10))
        }
    }

    /// An aggregate, or an expression over aggregates.
    private mutating func aggregate(depth: Int) -> QueryExpression {
        switch weighted([8, 3, 1, 1]) {
        case 0:
            return simpleAggregate(depth: depth)
        case 1:
            let op = pick([BinaryOperator.add, .subtract, .multiply, .divide])
            let right = chance(0.5) ? numberLiteral() : simpleAggregate(depth: depth + 1)
            return .binary(op, simpleAggregate(depth: depth + 1), right)
        case 2:
            return .function("ROUND", [.function("AVG", [property(.number)]), intLiteral(0...2)])
        default:
            let many = CaseBranch(when: .binary(.greater, .countAll, intLiteral(0...3)), then: stringLiteral())
            return .caseWhen(subject: nil, branches: [many], otherwise: chance(0.7) ? stringLiteral() : nil)
        }
    }

    private mutating func simpleAggregate(depth: Int) -> QueryExpression {
        switch weighted([3, 3, 3, 3]) {
        case 0: return .countAll
        case 1: return .function("COUNT", [chance(0.8) ? property(.any) : value(depth: depth + 1)])
        case 2: return .function(pick(["SUM", "AVG"]), [chance(0.7) ? property(.number) : numeric(depth: depth + 1)])
        default: return .function(pick(["MIN", "MAX"]), [chance(0.8) ? property(.any) : value(depth: depth + 1)])
        }
    }

    private mutating func havingCondition(keys: [QueryExpression], depth: Int) -> QueryExpression {
        if depth < 2, chance(0.3) {
            let op = pick([BinaryOperator.and, .or])
            return .binary(op, havingCondition(keys: keys, depth: depth + 1), havingCondition(keys: keys, depth: depth + 1))
        }
        switch weighted([5, 2, 2, 1]) {
        case 0:
            return .binary(comparisonOperator(), simpleAggregate(depth: depth + 1), numberLiteral())
        case 1 where !keys.isEmpty:
            return .check(pick(keys), pick([Check.null, .missing, .valued]), negated: chance(0.5))
        case 2 where !keys.isEmpty:
            return .binary(comparisonOperator(), pick(keys), literal(depth: depth + 1))
        default:
            return .binary(.greater, .countAll, intLiteral(0...3))
        }
    }

    // MARK: Conditions

    private mutating func condition(depth: Int) -> QueryExpression {
        if depth < Self.maxDepth - 1, chance(0.4) {
            switch weighted([4, 4, 2]) {
            case 0: return .binary(.and, condition(depth: depth + 1), condition(depth: depth + 1))
            case 1: return .binary(.or, condition(depth: depth + 1), condition(depth: depth + 1))
            default: return .unary(.not, condition(depth: depth + 1))
            }
        }
        return predicate(depth: depth)
    }

    /// A condition that is not AND/OR/NOT.
    private mutating func predicate(depth: Int) -> QueryExpression {
        guard depth < Self.maxDepth else { return chance(0.8) ? property(.any) : literal(depth: depth) }
        let d = depth + 1
        let canQuantify = depth < Self.maxDepth - 1
        switch weighted([8, 4, 3, 2, 3, 3, canQuantify ? 3 : 0, 1, 1, 2, 2, 2, 1]) {
        case 0:  // against a literal of any type
            let (left, right) = (operand(depth: d), literal(depth: d))
            return chance(0.8) ? .binary(comparisonOperator(), left, right) : .binary(comparisonOperator(), right, left)
        case 1:  // two expressions (properties, arithmetic, ...)
            return .binary(comparisonOperator(), operand(depth: d), operand(depth: d))
        case 2:  // NOT IN is NOT over IN: one more level
            let negated = d < Self.maxDepth && chance(0.25)
            let itemDepth = negated ? d + 1 : d
            let list = QueryExpression.inList(
                operand(depth: itemDepth), (0..<int(1...4)).map { _ in literal(depth: itemDepth) })
            return negated ? .unary(.not, list) : list
        case 3:
            return between(depth: depth)
        case 4:
            let text = chance(0.85) ? stringy(depth: d) : operand(depth: d)
            return .binary(.like, text, chance(0.9) ? likePattern() : value(depth: d))
        case 5:
            return .check(operand(depth: d), pick([Check.null, .missing, .valued]), negated: chance(0.4))
        case 6:
            return quantified(depth: depth)
        case 7:
            return .function("ARRAY_CONTAINS", [arrayish(depth: d), literal(depth: d)])
        case 8:
            return .function("CONTAINS", [stringy(depth: d), stringLiteral()])
        case 9:
            let parameter = QueryExpression.parameter(pick(Self.parameterNames))
            if chance(0.2) { return .inList(operand(depth: d), [parameter, literal(depth: d)]) }
            return .binary(comparisonOperator(), operand(depth: d), parameter)
        case 10:
            switch weighted([3, 2, 3]) {
            case 0: return .binary(comparisonOperator(), meta(.id), .literal(.string(Self.documentID(int(0...30)))))
            case 1: return .binary(.like, meta(.id), .literal(.string(pick(["doc1%", "DOC_", "%5", "doc%0"]))))
            default: return .binary(comparisonOperator(), meta(.sequence), intLiteral(0...30))
            }
        case 11:  // a value's truthiness
            return chance(0.6) ? property(.any) : value(depth: depth)
        default:
            return pick([.literal(.bool(true)), .literal(.bool(false)), .literal(.null), .missing, .literal(.int(0))])
        }
    }

    private mutating func between(depth: Int) -> QueryExpression {
        let d = depth + 1
        switch weighted([6, 3, 1]) {
        case 0:
            let low = int(-5...15)
            let high: QueryExpression = chance(0.5) ? .literal(.int(Int64(low + int(-1...8)))) : .literal(fraction())
            return .between(numeric(depth: d), lower: .literal(.int(Int64(low))), upper: high)
        case 1:
            let bounds = [pick(Self.literalWords), pick(Self.literalWords)].sorted {
                $0.utf8.lexicographicallyPrecedes($1.utf8)
            }
            return .between(stringy(depth: d), lower: .literal(.string(bounds[0])), upper: .literal(.string(bounds[1])))
        default:  // bounds of mixed types
            return .between(operand(depth: d), lower: literal(depth: d), upper: literal(depth: d))
        }
    }

    /// A LIKE pattern from a vocabulary word: some characters become `_` or
    /// `%`, some ASCII letters change case, literal `%` `_` `\` are escaped.
    private mutating func likePattern() -> QueryExpression {
        if chance(0.1) { return .literal(.string(pick(["%", "", "_", "%%", "___"]))) }
        let word = chance(0.3) ? pick(Self.tagWords) : pick(Self.literalWords)
        var pattern = chance(0.3) ? "%" : ""
        for scalar in word.unicodeScalars {
            switch weighted([15, 7, 78]) {
            case 0: pattern += "_"
            case 1: pattern += "%"
            default:
                if scalar == "%" || scalar == "_" || scalar == "\\" { pattern += "\\" }
                pattern.unicodeScalars.append(chance(0.3) ? Self.flippingASCIICase(scalar) : scalar)
            }
        }
        if chance(0.3) { pattern += "%" }
        return .literal(.string(pattern))
    }

    private static func flippingASCIICase(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A: return Unicode.Scalar(UInt8(scalar.value ^ 0x20))
        default: return scalar
        }
    }

    /// `ANY|EVERY v IN collection SATISFIES condition-on-v END`.
    private mutating func quantified(depth: Int) -> QueryExpression {
        let name =
            !variables.contains("a") && chance(0.05)
            ? "a"  // shadows the property `a` inside the condition
            : ["v", "w", "u"].first { !variables.contains($0) } ?? "x\(variables.count)"
        let collection: QueryExpression
        if let outer = variables.last, chance(0.4) {
            collection = .property(source: nil, path: [.key(outer)])
        } else {
            switch weighted([6, 1, 1, 1]) {
            case 0: collection = property(.array)
            case 1: collection = arrayLiteral()  // depth + 1 < maxDepth: predicates only quantify then
            case 2: collection = property(.any)  // often not an array: NULL
            default: collection = .parameter(pick(Self.parameterNames))
            }
        }
        variables.append(name)
        let condition = variableCondition(name, depth: depth + 1)
        variables.removeLast()
        return .quantified(chance(0.6) ? .any : .every, variable: name, in: collection, satisfies: condition)
    }

    /// A SATISFIES condition: mostly about the variable `name`.
    private mutating func variableCondition(_ name: String, depth: Int) -> QueryExpression {
        let variable = QueryExpression.property(source: nil, path: [.key(name)])
        guard depth < Self.maxDepth else { return variable }  // its truthiness
        let canNest = depth < Self.maxDepth - 1
        switch weighted([6, 2, 2, 2, 2, canNest ? 2 : 0, canNest ? 2 : 0, canNest ? 1 : 0, 2]) {
        case 0:
            let right = chance(0.6) ? QueryExpression.literal(.string(pick(Self.tagWords))) : literal(depth: depth + 1)
            return .binary(comparisonOperator(), variable, right)
        case 1:
            return .binary(.like, variable, likePattern())
        case 2:
            return .inList(variable, (0..<int(1...3)).map { _ in .literal(.string(pick(Self.tagWords))) })
        case 3:
            return .check(variable, pick([Check.null, .missing, .valued]), negated: chance(0.3))
        case 4:  // against a document property
            return .binary(comparisonOperator(), variable, property(.any))
        case 5:
            let word = pick(Self.tagWords)
            return .binary(.equal, .function(pick(["LOWER", "UPPER"]), [variable]), .literal(.string(word.lowercased())))
        case 6:
            let op = pick([BinaryOperator.and, .or])
            return .binary(op, variableCondition(name, depth: depth + 1), variableCondition(name, depth: depth + 1))
        case 7:
            return quantified(depth: depth)
        default:
            return condition(depth: depth)  // may still use the variable, through property()
        }
    }

    private mutating func comparisonOperator() -> BinaryOperator {
        pick([.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual])
    }

    // MARK: Values

    /// Any expression.
    private mutating func value(depth: Int) -> QueryExpression {
        guard depth < Self.maxDepth else { return atom(depth: depth) }
        let d = depth + 1
        switch weighted([6, 4, 1, 1, 4, 1, 1, 2, 1]) {
        case 0:
            return atom(depth: depth)
        case 1:
            return arithmetic(depth: depth)
        case 2:
            return .unary(.negate, d < Self.maxDepth && chance(0.3) ? arithmetic(depth: d) : property(.number))
        case 3:
            return .binary(.concat, stringy(depth: d), stringy(depth: d))
        case 4:
            return function(depth: depth)
        case 5:
            let branches = (0..<int(1...2)).map { _ in CaseBranch(when: condition(depth: d), then: value(depth: d)) }
            return .caseWhen(subject: nil, branches: branches, otherwise: chance(0.6) ? value(depth: d) : nil)
        case 6:
            let subject = chance(0.7) ? property(.any) : value(depth: d)
            let branches = (0..<int(1...3)).map { _ in CaseBranch(when: literal(depth: d), then: value(depth: d)) }
            return .caseWhen(subject: subject, branches: branches, otherwise: chance(0.6) ? value(depth: d) : nil)
        case 7:
            return condition(depth: depth)
        default:
            return .array((0..<int(0...3)).map { _ in value(depth: d) })
        }
    }

    /// A property, literal, `meta()` property or parameter.
    private mutating func atom(depth: Int) -> QueryExpression {
        switch weighted([8, 4, 2, 1]) {
        case 0: return property(.any)
        case 1: return literal(depth: depth)
        case 2: return meta(chance(0.5) ? .id : .sequence)
        default: return .parameter(pick(Self.parameterNames))
        }
    }

    /// Mostly a property, else any expression.
    private mutating func operand(depth: Int) -> QueryExpression {
        chance(0.6) ? property(pick(Kind.allCases)) : value(depth: depth)
    }

    /// Mostly something numeric.
    private mutating func numeric(depth: Int) -> QueryExpression {
        guard depth < Self.maxDepth else { return chance(0.7) ? property(.number) : numberLiteral() }
        switch weighted([6, 1, 3, 3, 1]) {
        case 0: return property(.number)
        case 1: return meta(.sequence)
        case 2: return numberLiteral()
        case 3: return chance(0.6) ? arithmetic(depth: depth) : numericFunction(depth: depth)
        default: return value(depth: depth)  // anything: a non-number gives NULL
        }
    }

    /// Mostly something of string type.
    private mutating func stringy(depth: Int) -> QueryExpression {
        guard depth < Self.maxDepth else { return chance(0.7) ? property(.string) : stringLiteral() }
        switch weighted([6, 3, 2, 1, 1]) {
        case 0: return property(.string)
        case 1: return stringLiteral()
        case 2: return .function(pick(["LOWER", "UPPER", "TRIM", "LTRIM", "RTRIM"]), [stringy(depth: depth + 1)])
        case 3: return meta(.id)
        default: return value(depth: depth)
        }
    }

    /// Mostly an array.
    private mutating func arrayish(depth: Int) -> QueryExpression {
        guard depth < Self.maxDepth else { return property(.array) }
        switch weighted([6, 2, 1, 1]) {
        case 0: return property(.array)
        case 1: return arrayLiteral()
        case 2: return .array((0..<int(0...3)).map { _ in atom(depth: depth + 1) })
        default: return value(depth: depth)
        }
    }

    /// `+ - * / %`; `%` only ever has properties and integer literals as operands.
    private mutating func arithmetic(depth: Int) -> QueryExpression {
        let op = pick([BinaryOperator.add, .subtract, .multiply, .divide, .modulo])
        guard op != .modulo else {
            return .binary(.modulo, moduloOperand(), moduloOperand())
        }
        return .binary(op, numeric(depth: depth + 1), numeric(depth: depth + 1))
    }

    private mutating func moduloOperand() -> QueryExpression {
        switch weighted([5, 1, 4]) {
        case 0: return property(.number)
        case 1: return meta(.sequence)
        default: return intLiteral(-7...7)
        }
    }

    private mutating func function(depth: Int) -> QueryExpression {
        let d = depth + 1
        switch weighted([4, 1, 1, 1, 5]) {
        case 0: return .function(pick(["LOWER", "UPPER", "LENGTH", "TRIM", "LTRIM", "RTRIM"]), [stringy(depth: d)])
        case 1: return .function("CONTAINS", [stringy(depth: d), stringLiteral()])
        case 2: return .function("ARRAY_LENGTH", [arrayish(depth: d)])
        case 3: return .function("ARRAY_CONTAINS", [arrayish(depth: d), literal(depth: d)])
        default: return numericFunction(depth: depth)
        }
    }

    private mutating func numericFunction(depth: Int) -> QueryExpression {
        let d = depth + 1
        switch weighted([12, 2, 1, 1, 1]) {
        case 0:
            let name = pick(["ABS", "CEIL", "FLOOR", "ROUND", "TRUNC", "SIGN", "SQRT", "LN", "LOG", "SIN", "COS", "TAN"])
            return .function(name, [numeric(depth: d)])
        case 1:  // (negative digits are left out: SQLite's round() treats them as 0)
            return .function("ROUND", [numeric(depth: d), intLiteral(0...3)])
        case 2:
            // Small arguments only: e^20 is the largest.
            return .function("EXP", [chance(0.7) ? property(.number) : numberLiteral()])
        case 3:
            // No 0 to a negative power: infinity has no JSON form.
            if chance(0.6) { return .function("POWER", [property(.number), intLiteral(0...3)]) }
            let base: QueryExpression = chance(0.5) ? .literal(fraction()) : pick([2, 3, -2].map { .literal(.int($0)) })
            return .function("POWER", [base, chance(0.5) ? intLiteral(-2...3) : property(.number)])
        default:
            return .function(pick(["PI", "E"]), [])
        }
    }

    /// A document property: a path from the vocabulary, sometimes qualified
    /// with the source alias (`d.n`, `docs.n`), sometimes the whole body; in a
    /// SATISFIES condition sometimes a bound variable instead.
    private mutating func property(_ kind: Kind) -> QueryExpression {
        if !variables.isEmpty, chance(0.3) {
            var path: [PathComponent] = [.key(pick(variables))]
            if chance(0.1) { path.append(chance(0.5) ? .index(0) : .key("a")) }
            return .property(source: nil, path: path)
        }
        if chance(0.02) { return .property(source: nil, path: [.key(aliasName)]) }
        var path = PathComponent.parse(dotted: pick(Self.pathsByKind[kind] ?? []))
        if let sourceAlias, chance(0.5) {
            path.insert(.key(sourceAlias), at: 0)
        } else if sourceAlias == nil, chance(0.08) {
            path.insert(.key(Self.collectionName), at: 0)
        }
        return .property(source: nil, path: path)
    }

    /// `meta().property`, or sometimes `meta(alias).property`.
    private mutating func meta(_ property: MetaProperty) -> QueryExpression {
        .meta(source: chance(0.3) ? aliasName : nil, property)
    }

    /// A constant of any type (objects only come as parameters: SQL++ text
    /// has no object literal here). An array needs a level of nesting.
    private mutating func literal(depth: Int) -> QueryExpression {
        switch weighted([2, 2, 5, 3, 5, 1, depth < Self.maxDepth ? 2 : 0]) {
        case 0: return .literal(.null)
        case 1: return .literal(.bool(chance(0.5)))
        case 2: return intLiteral()
        case 3: return .literal(fraction())
        case 4: return stringLiteral()
        case 5: return .missing
        default: return arrayLiteral()
        }
    }

    private mutating func intLiteral(_ range: ClosedRange<Int> = -5...20) -> QueryExpression {
        .literal(.int(Int64(int(range))))
    }

    private mutating func numberLiteral() -> QueryExpression {
        chance(0.6) ? intLiteral() : .literal(fraction())
    }

    private mutating func stringLiteral() -> QueryExpression {
        .literal(.string(chance(0.3) ? pick(Self.tagWords) : pick(Self.literalWords)))
    }

    /// `[...]` of constants, as the parser builds it: an array expression, not an array literal.
    private mutating func arrayLiteral() -> QueryExpression {
        .array((0..<int(0...3)).map { _ in chance(0.6) ? .literal(.string(pick(Self.tagWords))) : intLiteral() })
    }

    // MARK: Randomness

    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &random)
    }

    private mutating func pick<T>(_ items: [T]) -> T {
        items[Int.random(in: items.indices, using: &random)]
    }

    /// An index into `weights`, drawn in proportion to them.
    private mutating func weighted(_ weights: [Int]) -> Int {
        var roll = int(0...(weights.reduce(0, +) - 1))
        for (index, weight) in weights.enumerated() {
            if roll < weight { return index }
            roll -= weight
        }
        return weights.count - 1
    }
}

// MARK: - SQL++ text

extension QueryGenerator {
    /// The statement as SQL++ text: keywords upper-case, names in backticks,
    /// every compound expression in parentheses so precedence never matters.
    static func render(_ statement: SelectStatement) -> String {
        precondition(statement.joins.isEmpty, "the renderer does not write joins")
        var sql = "SELECT " + (statement.distinct ? "DISTINCT " : "")
        sql += statement.results.map { render(item: $0) }.joined(separator: ", ")
        sql += " FROM " + render(source: statement.from)
        if let condition = statement.whereClause { sql += " WHERE " + render(condition) }
        if !statement.groupBy.isEmpty { sql += " GROUP BY " + statement.groupBy.map { render($0) }.joined(separator: ", ") }
        if let condition = statement.having { sql += " HAVING " + render(condition) }
        if !statement.orderBy.isEmpty {
            let items = statement.orderBy.map { render($0.expression) + ($0.descending ? " DESC" : "") }
            sql += " ORDER BY " + items.joined(separator: ", ")
        }
        if let limit = statement.limit { sql += " LIMIT " + render(limit) }
        if let offset = statement.offset { sql += " OFFSET " + render(offset) }
        return sql
    }

    /// One expression as SQL++ text.
    static func render(_ expression: QueryExpression) -> String {
        switch expression {
        case .literal(let value):
            return render(literal: value)
        case .missing:
            return "MISSING"
        case .property(let source, let path):
            return (source.map { quoted($0) + "." } ?? "") + render(path: path)
        case .meta(let source, let property):
            return "meta(\(source ?? "")).\(property.rawValue)"
        case .parameter(let name):
            return "$" + name
        case .array(let items):
            return "[" + items.map { render($0) }.joined(separator: ", ") + "]"
        case .unary(.not, let operand):
            return "(NOT \(render(operand)))"
        case .unary(.negate, let operand):
            // `(-3)` is the literal -3; negating the literal 3 needs its own parentheses.
            var text = render(operand)
            switch operand {
            case .literal(.int), .literal(.double): text = "(\(text))"
            default: break
            }
            return "(-\(text))"
        case .binary(let op, let left, let right):
            return "(\(render(left)) \(op.rawValue) \(render(right)))"
        case .between(let value, let lower, let upper):
            return "(\(render(value)) BETWEEN \(render(lower)) AND \(render(upper)))"
        case .inList(let value, let items):
            return "(\(render(value)) IN (\(items.map { render($0) }.joined(separator: ", "))))"
        case .check(let value, let check, let negated):
            return "(\(render(value)) IS \(negated ? "NOT " : "")\(check.rawValue))"
        case .function(let name, let arguments):
            return "\(name)(\(arguments.map { render($0) }.joined(separator: ", ")))"
        case .countAll:
            return "COUNT(*)"
        case .caseWhen(let subject, let branches, let otherwise):
            var text = "(CASE"
            if let subject { text += " " + render(subject) }
            for branch in branches { text += " WHEN \(render(branch.when)) THEN \(render(branch.then))" }
            if let otherwise { text += " ELSE " + render(otherwise) }
            return text + " END)"
        case .quantified(let quantifier, let variable, let collection, let condition):
            return "(\(quantifier.rawValue) \(variable) IN \(render(collection)) SATISFIES \(render(condition)) END)"
        case .match, .rank:
            preconditionFailure("the renderer does not write full-text search")
        }
    }

    private static func render(item: SelectItem) -> String {
        switch item {
        case .expression(let expression, let alias):
            return render(expression) + (alias.map { " AS " + quoted($0) } ?? "")
        case .all(let source, let alias):
            return (source.map { $0 + ".*" } ?? "*") + (alias.map { " AS " + quoted($0) } ?? "")
        }
    }

    private static func render(source: SourceSpec) -> String {
        guard case .named(let scope, let name) = source.collection else {
            preconditionFailure("the renderer only writes collections by name")
        }
        return (scope.map { $0 + "." } ?? "") + name + (source.alias.map { " AS " + $0 } ?? "")
    }

    private static func render(path: [PathComponent]) -> String {
        var text = ""
        for (position, component) in path.enumerated() {
            switch component {
            case .key(let key):
                text += (position == 0 ? "" : ".") + quoted(key)
            case .index(let index):
                precondition(position > 0, "a path starts with a name")
                text += "[\(index)]"
            }
        }
        return text
    }

    /// A number as a plain literal, a negative one in parentheses: `3`, `2.5`, `(-3)`.
    private static func render(literal value: DocumentValue) -> String {
        switch value {
        case .null:
            return "NULL"
        case .bool(let b):
            return b ? "TRUE" : "FALSE"
        case .int(let i):
            return i < 0 ? "(\(i))" : "\(i)"
        case .double(let d):
            precondition(d.isFinite && abs(d) < 1e15, "\(d) has no plain literal form")
            return d.sign == .minus ? "(\(d))" : "\(d)"  // Swift writes a double with a "."
        case .string(let s):
            return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .array(let items):
            return "[" + items.map { render(literal: $0) }.joined(separator: ", ") + "]"
        case .dictionary, .blob:
            preconditionFailure("object literals have no SQL++ form here")
        }
    }

    private static func quoted(_ name: String) -> String {
        "`" + name.replacingOccurrences(of: "`", with: "``") + "`"
    }
}
