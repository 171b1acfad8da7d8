/// A recursive-descent parser for the SELECT subset of SQL++ that the store
/// runs (see "Queries" in the SyncNodeStore tour, `Tour.md`, for the grammar). Errors name the
/// character position and what was expected there.
struct SQLPPParser {
    private let tokens: [SQLPPLexer.Token]
    private var index = 0
    private var depth = 0

    /// Nesting deeper than this is refused rather than risking the stack.
    static let maximumDepth = 64

    private static let reserved: Set<String> = [
        "SELECT", "DISTINCT", "FROM", "WHERE", "GROUP", "BY", "HAVING", "ORDER", "LIMIT", "OFFSET", "AS",
        "JOIN", "INNER", "LEFT", "OUTER", "CROSS", "ON", "AND", "OR", "NOT", "IN", "IS", "LIKE", "BETWEEN",
        "CASE", "WHEN", "THEN", "ELSE", "END", "ANY", "SOME", "EVERY", "SATISFIES", "ASC", "DESC",
        "NULL", "MISSING", "VALUED", "TRUE", "FALSE",
    ]

    init(_ text: String) throws(StoreError) {
        tokens = try SQLPPLexer.tokenize(text)
    }

    /// Parses a whole `SELECT` statement.
    static func parseStatement(_ text: String) throws(StoreError) -> SelectStatement {
        var parser = try SQLPPParser(text)
        let statement = try parser.statement()
        _ = parser.acceptSymbol(";")
        try parser.expectEnd()
        return statement
    }

    /// Parses one expression (index definitions).
    static func parseExpression(_ text: String) throws(StoreError) -> QueryExpression {
        var parser = try SQLPPParser(text)
        let e = try parser.expression()
        try parser.expectEnd()
        return e
    }

    // MARK: - Statement

    private mutating func statement() throws(StoreError) -> SelectStatement {
        try expectKeyword("SELECT")
        let distinct = acceptKeyword("DISTINCT")
        var results: [SelectItem] = []
        repeat { results.append(try selectItem()) } while acceptSymbol(",")
        try expectKeyword("FROM")
        var statement = SelectStatement(distinct: distinct, results: results, from: try source())
        while let kind = try joinKind() {
            let source = try source()
            var on: QueryExpression?
            if kind != .cross {
                try expectKeyword("ON")
                on = try expression()
            }
            statement.joins.append(JoinSpec(kind: kind, source: source, on: on))
        }
        if acceptKeyword("WHERE") { statement.whereClause = try expression() }
        if acceptKeyword("GROUP") {
            try expectKeyword("BY")
            repeat { statement.groupBy.append(try expression()) } while acceptSymbol(",")
        }
        if acceptKeyword("HAVING") { statement.having = try expression() }
        if acceptKeyword("ORDER") {
            try expectKeyword("BY")
            repeat {
                let e = try expression()
                let descending = acceptKeyword("DESC")
                if !descending { _ = acceptKeyword("ASC") }
                statement.orderBy.append(OrderItem(expression: e, descending: descending))
            } while acceptSymbol(",")
        }
        if acceptKeyword("LIMIT") { statement.limit = try expression() }
        if acceptKeyword("OFFSET") { statement.offset = try expression() }
        return statement
    }

    private mutating func selectItem() throws(StoreError) -> SelectItem {
        if acceptSymbol("*") { return .all(source: nil, alias: try alias()) }
        if case .symbol(".") = peek(1).kind, case .symbol("*") = peek(2).kind, let name = identifierName(peek().kind) {
            index += 3
            return .all(source: name, alias: try alias())
        }
        return .expression(try expression(), alias: try alias())
    }

    private mutating func alias() throws(StoreError) -> String? {
        if acceptKeyword("AS") { return try identifier("an alias after AS") }
        if case .quotedIdentifier(let name) = peek().kind { index += 1; return name }
        if case .word(let w) = peek().kind, !Self.reserved.contains(w.uppercased()) { index += 1; return w }
        return nil
    }

    private mutating func source() throws(StoreError) -> SourceSpec {
        let first = try identifier("a collection name")
        var reference = CollectionReference.named(scope: nil, name: first)
        if acceptSymbol(".") { reference = .named(scope: first, name: try identifier("a collection name after the scope")) }
        return SourceSpec(collection: reference, alias: try alias())
    }

    private mutating func joinKind() throws(StoreError) -> JoinSpec.Kind? {
        if acceptKeyword("JOIN") { return .inner }
        if acceptKeyword("INNER") { try expectKeyword("JOIN"); return .inner }
        if acceptKeyword("LEFT") { _ = acceptKeyword("OUTER"); try expectKeyword("JOIN"); return .leftOuter }
        if acceptKeyword("CROSS") { try expectKeyword("JOIN"); return .cross }
        return nil
    }

    // MARK: - Expressions, lowest precedence first

    mutating func expression() throws(StoreError) -> QueryExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw .invalidQuery("syntax error at position \(peek().position): expressions nest more than \(Self.maximumDepth) levels deep")
        }
        return try or()
    }

    private mutating func or() throws(StoreError) -> QueryExpression {
        var terms = [try and()]
        while acceptKeyword("OR") { terms.append(try and()) }
        return Self.balanced(terms, .or)
    }

    private mutating func and() throws(StoreError) -> QueryExpression {
        var terms = [try not()]
        while acceptKeyword("AND") { terms.append(try not()) }
        return Self.balanced(terms, .and)
    }

    /// Joins the terms of an associative operator as a balanced tree, so a
    /// long `a OR b OR ...` stays shallow for the compiler's recursion.
    private static func balanced(_ terms: [QueryExpression], _ op: BinaryOperator) -> QueryExpression {
        terms.balancedTree { .binary(op, $0, $1) }
    }

    /// Left-associative chains (`a - b - c`) nest one level per operator: they count toward the depth limit.
    private mutating func chainLink() throws(StoreError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw .invalidQuery("syntax error at position \(peek().position): more than \(Self.maximumDepth) operators in a row; add parentheses or split the expression")
        }
    }

    private mutating func not() throws(StoreError) -> QueryExpression {
        if acceptKeyword("NOT") {
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maximumDepth else { throw .invalidQuery("syntax error at position \(peek().position): too many NOTs") }
            return .unary(.not, try not())
        }
        return try comparison()
    }

    private static let comparisonOperators: [String: BinaryOperator] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]

    private mutating func comparison() throws(StoreError) -> QueryExpression {
        let left = try concatenation()
        if case .symbol(let s) = peek().kind, let op = Self.comparisonOperators[s] {
            index += 1
            return .binary(op, left, try concatenation())
        }
        if acceptKeyword("IS") {
            let negated = acceptKeyword("NOT")
            for check in [Check.null, .missing, .valued] where acceptKeyword(check.rawValue) {
                return .check(left, check, negated: negated)
            }
            throw expected("NULL, MISSING or VALUED after IS")
        }
        let negated = acceptKeyword("NOT")
        let e: QueryExpression
        if acceptKeyword("LIKE") {
            e = .binary(.like, left, try concatenation())
        } else if acceptKeyword("IN") {
            e = .inList(left, try inList())
        } else if acceptKeyword("BETWEEN") {
            let lower = try concatenation()
            try expectKeyword("AND")
            e = .between(left, lower: lower, upper: try concatenation())
        } else if negated {
            throw expected("LIKE, IN or BETWEEN after NOT")
        } else {
            return left
        }
        return negated ? .unary(.not, e) : e
    }

    private mutating func inList() throws(StoreError) -> [QueryExpression] {
        let close: String
        if acceptSymbol("(") { close = ")" } else if acceptSymbol("[") { close = "]" } else { throw expected("'(' or '[' after IN") }
        var items: [QueryExpression] = []
        if acceptSymbol(close) { return items }
        repeat { items.append(try expression()) } while acceptSymbol(",")
        try expectSymbol(close)
        return items
    }

    private mutating func concatenation() throws(StoreError) -> QueryExpression {
        var terms = [try additive()]
        while acceptSymbol("||") { terms.append(try additive()) }
        return Self.balanced(terms, .concat)
    }

    private mutating func additive() throws(StoreError) -> QueryExpression {
        let start = depth
        defer { depth = start }
        var e = try multiplicative()
        while true {
            if acceptSymbol("+") { try chainLink(); e = .binary(.add, e, try multiplicative()) }
            else if acceptSymbol("-") { try chainLink(); e = .binary(.subtract, e, try multiplicative()) }
            else { return e }
        }
    }

    private mutating func multiplicative() throws(StoreError) -> QueryExpression {
        let start = depth
        defer { depth = start }
        var e = try unary()
        while true {
            if acceptSymbol("*") { try chainLink(); e = .binary(.multiply, e, try unary()) }
            else if acceptSymbol("/") { try chainLink(); e = .binary(.divide, e, try unary()) }
            else if acceptSymbol("%") { try chainLink(); e = .binary(.modulo, e, try unary()) }
            else { return e }
        }
    }

    private mutating func unary() throws(StoreError) -> QueryExpression {
        if acceptSymbol("+") || peekSymbol("-") {
            let negate = acceptSymbol("-")
            depth += 1
            defer { depth -= 1 }
            guard depth <= Self.maximumDepth else { throw .invalidQuery("syntax error at position \(peek().position): too many signs") }
            let operand = try unary()
            guard negate else { return operand }
            switch operand {
            case .literal(.int(let i)) where i != .min: return .literal(.int(-i))
            case .literal(.double(let d)): return .literal(.double(-d))
            default: return .unary(.negate, operand)
            }
        }
        return try postfix()
    }

    private mutating func postfix() throws(StoreError) -> QueryExpression {
        var e = try primary()
        while true {
            if acceptSymbol(".") {
                let name = try identifier("a property name after '.'")
                guard case .property(let source, let path) = e else { throw .invalidQuery("a property path can only follow a property (before position \(peek().position))") }
                e = .property(source: source, path: path + [.key(name)])
            } else if case .symbol("[") = peek().kind, case .property(let source, let path) = e {
                index += 1
                guard case .number(.int(let i)) = peek().kind else { throw expected("an integer array index") }
                index += 1
                try expectSymbol("]")
                e = .property(source: source, path: path + [.index(Int(i))])
            } else {
                return e
            }
        }
    }

    private mutating func primary() throws(StoreError) -> QueryExpression {
        let token = peek()
        switch token.kind {
        case .number(let n):
            index += 1
            return .literal(n)
        case .string(let s):
            index += 1
            return .literal(.string(s))
        case .parameter(let p):
            index += 1
            return .parameter(p)
        case .quotedIdentifier(let name):
            index += 1
            return .property(source: nil, path: [.key(name)])
        case .symbol("("):
            index += 1
            let e = try expression()
            try expectSymbol(")")
            return e
        case .symbol("["):
            index += 1
            var items: [QueryExpression] = []
            if !acceptSymbol("]") {
                repeat { items.append(try expression()) } while acceptSymbol(",")
                try expectSymbol("]")
            }
            return .array(items)
        case .word(let word):
            return try wordExpression(word)
        default:
            throw expected("an expression")
        }
    }

    private mutating func wordExpression(_ word: String) throws(StoreError) -> QueryExpression {
        let upper = word.uppercased()
        switch upper {
        case "TRUE": index += 1; return .literal(.bool(true))
        case "FALSE": index += 1; return .literal(.bool(false))
        case "NULL": index += 1; return .literal(.null)
        case "MISSING": index += 1; return .missing
        case "CASE": index += 1; return try caseExpression()
        case "ANY", "SOME", "EVERY":
            index += 1
            let quantifier: Quantifier = upper == "EVERY" ? .every : .any
            let variable = try identifier("a variable name after \(upper)")
            try expectKeyword("IN")
            let collection = try expression()
            try expectKeyword("SATISFIES")
            let condition = try expression()
            try expectKeyword("END")
            return .quantified(quantifier, variable: variable, in: collection, satisfies: condition)
        default:
            break
        }
        guard case .symbol("(") = peek(1).kind else {
            if Self.reserved.contains(upper) { throw expected("an expression") }
            index += 1
            return .property(source: nil, path: [.key(word)])
        }
        index += 2
        switch upper {
        case "META":
            var source: String?
            if !acceptSymbol(")") {
                source = try identifier("a source alias in META()")
                try expectSymbol(")")
            }
            try expectSymbol(".")
            let name = try identifier("a meta property (id, sequence, deleted, expiration, revisionID)")
            guard let property = MetaProperty.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                throw .invalidQuery("unknown meta property '\(name)'; known: id, sequence, deleted, expiration, revisionID")
            }
            return .meta(source: source, property)
        case "MATCH":
            let name = try indexName()
            try expectSymbol(",")
            let pattern = try expression()
            try expectSymbol(")")
            return .match(index: name, pattern: pattern)
        case "RANK":
            let name = try indexName()
            try expectSymbol(")")
            return .rank(index: name)
        case "COUNT" where peekSymbol("*"):
            index += 1
            try expectSymbol(")")
            return .countAll
        default:
            var args: [QueryExpression] = []
            if !acceptSymbol(")") {
                repeat { args.append(try expression()) } while acceptSymbol(",")
                try expectSymbol(")")
            }
            try FunctionCatalog.validate(upper, argumentCount: args.count)
            return .function(upper, args)
        }
    }

    private mutating func indexName() throws(StoreError) -> String {
        if case .string(let s) = peek().kind { index += 1; return s }
        return try identifier("an index name")
    }

    private mutating func caseExpression() throws(StoreError) -> QueryExpression {
        var subject: QueryExpression?
        if !isKeyword("WHEN") { subject = try expression() }
        var branches: [CaseBranch] = []
        while acceptKeyword("WHEN") {
            let when = try expression()
            try expectKeyword("THEN")
            branches.append(CaseBranch(when: when, then: try expression()))
        }
        guard !branches.isEmpty else { throw expected("WHEN in CASE") }
        let otherwise = acceptKeyword("ELSE") ? try expression() : nil
        try expectKeyword("END")
        return .caseWhen(subject: subject, branches: branches, otherwise: otherwise)
    }

    // MARK: - Tokens

    private func peek(_ offset: Int = 0) -> SQLPPLexer.Token {
        tokens[min(index + offset, tokens.count - 1)]
    }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .word(let w) = peek().kind { return w.uppercased() == keyword }
        return false
    }

    private mutating func acceptKeyword(_ keyword: String) -> Bool {
        guard isKeyword(keyword) else { return false }
        index += 1
        return true
    }

    private mutating func expectKeyword(_ keyword: String) throws(StoreError) {
        guard acceptKeyword(keyword) else { throw expected(keyword) }
    }

    private func peekSymbol(_ symbol: String) -> Bool {
        if case .symbol(let s) = peek().kind { return s == symbol }
        return false
    }

    private mutating func acceptSymbol(_ symbol: String) -> Bool {
        guard peekSymbol(symbol) else { return false }
        index += 1
        return true
    }

    private mutating func expectSymbol(_ symbol: String) throws(StoreError) {
        guard acceptSymbol(symbol) else { throw expected("'\(symbol)'") }
    }

    private func identifierName(_ kind: SQLPPLexer.Kind) -> String? {
        switch kind {
        case .quotedIdentifier(let name): return name
        case .word(let w) where !Self.reserved.contains(w.uppercased()): return w
        default: return nil
        }
    }

    private mutating func identifier(_ what: String) throws(StoreError) -> String {
        guard let name = identifierName(peek().kind) else { throw expected(what) }
        index += 1
        return name
    }

    private func expectEnd() throws(StoreError) {
        guard case .end = peek().kind else { throw expected("end of query") }
    }

    private func expected(_ what: String) -> StoreError {
        let token = peek()
        return .invalidQuery("syntax error at position \(token.position): expected \(what), found \(token.kind)")
    }
}
