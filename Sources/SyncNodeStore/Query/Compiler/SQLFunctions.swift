import Foundation
import GRDB
import Synchronization

/// The SQL functions queries need beyond SQLite's own, registered on every
/// connection the store opens. All are deterministic, so value indexes may use them.
enum SQLFunctions {
    static func register(_ db: GRDB.Database) {
        db.add(function: DatabaseFunction("sn_lower", argumentCount: 1, pure: true) { args in
            String.fromDatabaseValue(args[0])?.lowercased()
        })
        db.add(function: DatabaseFunction("sn_upper", argumentCount: 1, pure: true) { args in
            String.fromDatabaseValue(args[0])?.uppercased()
        })
        db.add(function: DatabaseFunction("sn_regexp_like", argumentCount: 2, pure: true) { args in
            guard let text = String.fromDatabaseValue(args[0]), let pattern = String.fromDatabaseValue(args[1]) else { return nil }
            return try RegexCache.shared.regex(pattern).matches(text)
        })
        db.add(function: DatabaseFunction("sn_fts_pattern", argumentCount: 1, pure: true) { args in
            String.fromDatabaseValue(args[0]).map(FullTextPattern.fts5)
        })
        db.add(function: DatabaseFunction("sn_min", argumentCount: 2, pure: true, aggregate: CollationExtreme<Minimum>.self))
        db.add(function: DatabaseFunction("sn_max", argumentCount: 2, pure: true, aggregate: CollationExtreme<Maximum>.self))
        DigestTable.registerFunctions(db)
        ProjectFunction.register(db)
    }
}

/// Compiled regular expressions by pattern (queries run the same few patterns over many rows).
final class RegexCache: Sendable {
    static let shared = RegexCache()

    struct Compiled: @unchecked Sendable {
        // NSRegularExpression is immutable after creation and documented as thread-safe.
        let expression: NSRegularExpression

        /// How long one match may take: a pattern that backtracks catastrophically
        /// (`(a+)+$` on a long run of a's) would otherwise hold the query for hours.
        static let timeLimit = Duration.milliseconds(100)

        func matches(_ text: String) throws -> Bool {
            let started = ContinuousClock.now
            var found = false
            var timedOut = false
            // `.reportProgress` calls back during a long match, so it can be stopped.
            expression.enumerateMatches(in: text, options: [.reportProgress], range: NSRange(text.startIndex..., in: text)) { result, _, stop in
                if result != nil {
                    found = true
                    stop.pointee = true
                } else if started.duration(to: .now) > Self.timeLimit {
                    timedOut = true
                    stop.pointee = true
                }
            }
            guard !timedOut else {
                throw StoreError.invalidQuery("the regular expression '\(expression.pattern)' took over \(Self.timeLimit) on one value; simplify it")
            }
            return found
        }
    }

    private let cache = Mutex<[String: Compiled]>([:])

    func regex(_ pattern: String) throws -> Compiled {
        if let hit = cache.withLock({ $0[pattern] }) { return hit }
        let compiled: Compiled
        do {
            compiled = Compiled(expression: try NSRegularExpression(pattern: pattern))
        } catch {
            throw StoreError.invalidQuery("invalid regular expression '\(pattern)'")
        }
        cache.withLock { c in
            if c.count > 256 { c.removeAll() }
            c[pattern] = compiled
        }
        return compiled
    }
}

protocol ExtremeDirection { static var wantsLarger: Bool { get } }
enum Minimum: ExtremeDirection { static let wantsLarger = false }
enum Maximum: ExtremeDirection { static let wantsLarger = true }

/// MIN/MAX over values of mixed types, in the query collation order; the
/// result is the winner as JSON text (NULL when every value was null or MISSING).
struct CollationExtreme<Direction: ExtremeDirection>: DatabaseAggregate {
    private var best: (rank: Int, value: DatabaseValue, tag: String)?

    init() {}

    mutating func step(_ arguments: [DatabaseValue]) throws {
        guard let tag = String.fromDatabaseValue(arguments[0]), tag != "null" else { return }
        let candidate = (rank: Self.rank(tag), value: arguments[1], tag: tag)
        guard let current = best else { best = candidate; return }
        let order = Self.compare(candidate, current)
        if Direction.wantsLarger ? order > 0 : order < 0 { best = candidate }
    }

    func finalize() throws -> (any DatabaseValueConvertible)? {
        guard let best else { return nil }
        switch best.tag {
        case "true": return "true"
        case "false": return "false"
        case "text": return JSONWriter.string(.string(String.fromDatabaseValue(best.value) ?? ""))
        default: return best.value
        }
    }

    private static func rank(_ tag: String) -> Int {
        switch tag {
        case "false", "true": return 2
        case "integer", "real": return 4
        case "text": return 5
        case "array": return 6
        default: return 7
        }
    }

    private static func compare(_ a: (rank: Int, value: DatabaseValue, tag: String), _ b: (rank: Int, value: DatabaseValue, tag: String)) -> Int {
        if a.rank != b.rank { return a.rank < b.rank ? -1 : 1 }
        if a.rank == 4 || a.rank == 2 {
            let x = Double.fromDatabaseValue(a.value) ?? 0, y = Double.fromDatabaseValue(b.value) ?? 0
            return x == y ? 0 : (x < y ? -1 : 1)
        }
        let x = String.fromDatabaseValue(a.value) ?? "", y = String.fromDatabaseValue(b.value) ?? ""
        // By bytes: Swift's == takes composed and decomposed accents as equal.
        return JSONWriter.utf8Order(x, y) ? -1 : (JSONWriter.utf8Order(y, x) ? 1 : 0)
    }
}
