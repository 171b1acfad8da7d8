/// Splits SQL++ text into tokens, remembering where each starts so errors can point at it.
struct SQLPPLexer {
    enum Kind: Equatable {
        /// A bare word: a keyword or an identifier (case kept).
        case word(String)
        /// A backtick-quoted identifier.
        case quotedIdentifier(String)
        case string(String)
        case number(DocumentValue)
        case parameter(String)
        /// Punctuation and operators: `( ) [ ] , . * + - / % || = == != <> < <= > >= ;`.
        case symbol(String)
        case end
    }

    struct Token {
        let kind: Kind
        /// Character offset (0-based) in the query text.
        let position: Int
    }

    static func tokenize(_ text: String) throws(StoreError) -> [Token] {
        let chars = Array(text.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        func fail(_ message: String, at position: Int) -> StoreError {
            .invalidQuery("syntax error at position \(position): \(message)")
        }
        func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
            c == "_" || c.properties.isAlphabetic
        }
        func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
            isIdentifierStart(c) || ("0"..."9").contains(c) || c == "$"
        }
        while i < chars.count {
            let c = chars[i]
            let start = i
            if c.properties.isWhitespace { i += 1; continue }
            if c == "-", i + 1 < chars.count, chars[i + 1] == "-" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
                continue
            }
            if c == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                i += 2
                while i + 1 < chars.count, !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                guard i + 1 < chars.count else { throw fail("unterminated comment", at: start) }
                i += 2
                continue
            }
            if isIdentifierStart(c) {
                while i < chars.count, isIdentifierPart(chars[i]) { i += 1 }
                tokens.append(Token(kind: .word(String(String.UnicodeScalarView(chars[start..<i]))), position: start))
                continue
            }
            if ("0"..."9").contains(c) || (c == "." && i + 1 < chars.count && ("0"..."9").contains(chars[i + 1])) {
                var isReal = false
                while i < chars.count, ("0"..."9").contains(chars[i]) { i += 1 }
                if i < chars.count, chars[i] == ".", i + 1 < chars.count, ("0"..."9").contains(chars[i + 1]) {
                    isReal = true
                    i += 1
                    while i < chars.count, ("0"..."9").contains(chars[i]) { i += 1 }
                }
                if i < chars.count, chars[i] == "e" || chars[i] == "E" {
                    var j = i + 1
                    if j < chars.count, chars[j] == "+" || chars[j] == "-" { j += 1 }
                    if j < chars.count, ("0"..."9").contains(chars[j]) {
                        isReal = true
                        i = j
                        while i < chars.count, ("0"..."9").contains(chars[i]) { i += 1 }
                    }
                }
                let literal = String(String.UnicodeScalarView(chars[start..<i]))
                if !isReal, let int = Int64(literal) {
                    tokens.append(Token(kind: .number(.int(int)), position: start))
                } else if let double = Double(literal), double.isFinite {
                    tokens.append(Token(kind: .number(.double(double)), position: start))
                } else {
                    throw fail("number '\(literal)' is out of range", at: start)
                }
                continue
            }
            if c == "'" || c == "\"" || c == "`" {
                var value = String.UnicodeScalarView()
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == c {
                        // A doubled quote stands for itself.
                        if i + 1 < chars.count, chars[i + 1] == c { value.append(c); i += 2; continue }
                        closed = true
                        i += 1
                        break
                    }
                    value.append(chars[i])
                    i += 1
                }
                guard closed else {
                    throw fail(c == "`" ? "unterminated quoted identifier (missing `)" : "unterminated string (missing \(c))", at: start)
                }
                let s = String(value)
                tokens.append(Token(kind: c == "`" ? .quotedIdentifier(s) : .string(s), position: start))
                continue
            }
            if c == "$" {
                i += 1
                while i < chars.count, isIdentifierPart(chars[i]) { i += 1 }
                guard i > start + 1 else { throw fail("'$' must be followed by a parameter name", at: start) }
                tokens.append(Token(kind: .parameter(String(String.UnicodeScalarView(chars[start + 1..<i]))), position: start))
                continue
            }
            let two = i + 1 < chars.count ? String(String.UnicodeScalarView([c, chars[i + 1]])) : ""
            if ["||", "==", "!=", "<>", "<=", ">="].contains(two) {
                tokens.append(Token(kind: .symbol(two), position: start))
                i += 2
                continue
            }
            if "()[],.*+-/%=<>;".unicodeScalars.contains(c) {
                tokens.append(Token(kind: .symbol(String(c)), position: start))
                i += 1
                continue
            }
            throw fail("unexpected character '\(c)'", at: start)
        }
        tokens.append(Token(kind: .end, position: chars.count))
        return tokens
    }
}

extension SQLPPLexer.Kind: CustomStringConvertible {
    var description: String {
        switch self {
        case .word(let w): return "'\(w)'"
        case .quotedIdentifier(let w): return "`\(w)`"
        case .string(let s): return "string '\(s.prefix(20))'"
        case .number(let n): return "number \(n.toJSON())"
        case .parameter(let p): return "$\(p)"
        case .symbol(let s): return "'\(s)'"
        case .end: return "end of query"
        }
    }
}
