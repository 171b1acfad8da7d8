/// Rewrites a full-text pattern in the syntax the query language documents
/// (terms, `lin*`, `"phrases"`, `NEAR` / `NEAR/n`, `AND OR NOT`, parentheses,
/// `property:term`) into SQLite FTS5 syntax. Every term is quoted, so
/// punctuation inside a term (`don't`, `e-mail`) is never a syntax error.
enum FullTextPattern {
    private enum Token: Equatable {
        case term(String, prefix: Bool, column: String?)
        case phrase(String)
        case near(Int)
        case word(String)  // AND OR NOT
        case open, close
    }

    static func fts5(_ pattern: String) -> String {
        var tokens = tokenize(pattern)
        // NEAR chains: a NEAR/n b NEAR/m c -> NEAR(a b c, max(n, m)).
        var output: [String] = []
        var i = 0
        while i < tokens.count {
            if i + 2 < tokens.count, case .near = tokens[i + 1], isOperand(tokens[i]), isOperand(tokens[i + 2]) {
                var operands = [render(tokens[i])]
                var distance = 0
                while i + 2 < tokens.count, case .near(let n) = tokens[i + 1], isOperand(tokens[i + 2]) {
                    distance = max(distance, n)
                    operands.append(render(tokens[i + 2]))
                    i += 2
                }
                output.append("NEAR(\(operands.joined(separator: " ")), \(distance))")
                i += 1
                continue
            }
            if case .near = tokens[i] { tokens[i] = .term("NEAR", prefix: false, column: nil) }
            output.append(render(tokens[i]))
            i += 1
        }
        return output.joined(separator: " ")
    }

    private static func isOperand(_ token: Token) -> Bool {
        switch token {
        case .term(_, _, nil), .phrase: return true
        default: return false
        }
    }

    /// FTS5's string quoting (also its identifier quoting).
    static func quoted(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    private static func render(_ token: Token) -> String {
        switch token {
        case .term(let t, let prefix, let column):
            return (column.map { quoted($0) + " : " } ?? "") + quoted(t) + (prefix ? "*" : "")
        case .phrase(let p): return quoted(p)
        case .near(let n): return "NEAR/\(n)"
        case .word(let w): return w
        case .open: return "("
        case .close: return ")"
        }
    }

    private static func tokenize(_ pattern: String) -> [Token] {
        var tokens: [Token] = []
        var chars = Array(pattern)[...]
        var pendingColumn: String?
        while let c = chars.first {
            if c.isWhitespace { chars.removeFirst(); continue }
            if c == "(" { chars.removeFirst(); tokens.append(.open); continue }
            if c == ")" { chars.removeFirst(); tokens.append(.close); continue }
            if c == "\"" {
                chars.removeFirst()
                let phrase = String(chars.prefix { $0 != "\"" })
                chars = chars.dropFirst(phrase.count + 1)
                tokens.append(.phrase(phrase))
                continue
            }
            var word = String(chars.prefix { !$0.isWhitespace && $0 != "(" && $0 != ")" && $0 != "\"" })
            chars = chars.dropFirst(word.count)
            if let colon = word.firstIndex(of: ":"), colon != word.startIndex {
                let column = String(word[..<colon])
                word = String(word[word.index(after: colon)...])
                if word.isEmpty { pendingColumn = column; continue }
                pendingColumn = column
            }
            switch word {
            case "AND", "OR", "NOT":
                tokens.append(.word(word))
            case "NEAR":
                tokens.append(.near(10))
            case _ where word.hasPrefix("NEAR/") && Int(word.dropFirst(5)) != nil:
                tokens.append(.near(Int(word.dropFirst(5)) ?? 10))
            default:
                let prefix = word.hasSuffix("*")
                let term = prefix ? String(word.dropLast()) : word
                tokens.append(.term(term, prefix: prefix, column: pendingColumn))
            }
            pendingColumn = nil
        }
        return tokens
    }
}
