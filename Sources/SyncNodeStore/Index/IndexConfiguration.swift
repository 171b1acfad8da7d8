/// An index definition for ``DocumentCollection/createIndex(_:name:)``.
public protocol IndexConfiguration: Sendable {
    /// The stored form (kind and definition), so indexes survive reopening.
    var definition: IndexDefinition { get }
}

/// A value index: a SQLite expression index over SQL++ expressions, used by
/// queries whose WHERE or ORDER BY compare the same expressions.
///
/// ```swift
/// try hotels.createIndex(ValueIndexConfiguration(["type", "name"]), name: "TypeNameIndex")
/// ```
public struct ValueIndexConfiguration: IndexConfiguration {
    /// SQL++ expressions, most significant first (`"type"`, `"lower(name)"`, `"geo.alt"`).
    public let expressions: [String]

    /// A value index on these SQL++ expressions (not checked until ``DocumentCollection/createIndex(_:name:)``).
    public init(_ expressions: [String]) { self.expressions = expressions }

    /// The stored form: ``IndexDefinition/value(expressions:)``.
    public var definition: IndexDefinition { .value(expressions: expressions) }
}

/// A full-text index (SQLite FTS5) on one or more string properties, searched
/// with `MATCH(indexName, 'pattern')` and ordered by `RANK(indexName)`.
public struct FullTextIndexConfiguration: IndexConfiguration {
    /// Property paths (`"name"`, `"address.city"`).
    public let properties: [String]
    /// Accented letters match their plain forms (`cafe` finds `café`).
    public var ignoreAccents: Bool
    /// `"en"` / `"english"` stems words (porter: `rides` finds `ride`); any
    /// other language indexes words as they are.
    public var language: String?

    /// A full-text index on these property paths; by default accents matter and English words are stemmed.
    public init(_ properties: [String], ignoreAccents: Bool = false, language: String? = "en") {
        self.properties = properties
        self.ignoreAccents = ignoreAccents
        self.language = language
    }

    /// The stored form: ``IndexDefinition/fullText(properties:ignoreAccents:language:)``.
    public var definition: IndexDefinition { .fullText(properties: properties, ignoreAccents: ignoreAccents, language: language) }
}

/// A selector index: the documents a Mango selector matches, in the order they last changed
/// (SQLite's partial index on the change sequence).
///
/// A changes feed filtered by the same selector (`_changes?filter=_selector`, a replicator's
/// selector, a mesh subscription) then reads only the matching documents, instead of testing
/// every change since the asker's checkpoint: a device catching up on 1% of a large collection
/// costs about what that 1% costs. Build one on the node that serves the selector, for each
/// selector its peers pull by.
///
/// ```swift
/// try orders.createIndex(SelectorIndexConfiguration(["store": "s7"]), name: "store-s7")
/// ```
///
/// The feed uses it only for the same selector (compared as written, member order aside). Each
/// write tests the selector once more, so keep one per selector in use. Selectors that test
/// array elements (`$in`, `$nin`, `$elemMatch`, `$allMatch`, `$all`) cannot be indexed.
public struct SelectorIndexConfiguration: IndexConfiguration {
    /// The Mango selector (`{"type": "order", "store": "s7"}`).
    public let selector: DocumentValue

    /// An index of what `selector` matches (not checked until ``DocumentCollection/createIndex(_:name:)``).
    public init(_ selector: DocumentValue) { self.selector = selector }

    /// The stored form: ``IndexDefinition/selector(json:)``.
    public var definition: IndexDefinition { .selector(json: selector.toJSON()) }
}

/// What an index is built from, as stored in the database.
public enum IndexDefinition: Sendable, Hashable, Codable {
    /// A value index on SQL++ expressions, most significant first.
    case value(expressions: [String])
    /// A full-text index on property paths; a `language` of `en`, `english`, `en-*` or `en_*` (any case)
    /// stems words with Porter's rules, any other indexes them as they are.
    case fullText(properties: [String], ignoreAccents: Bool, language: String?)
    /// A selector index on a Mango selector, as JSON.
    case selector(json: String)

    var isFullText: Bool {
        if case .fullText = self { return true }
        return false
    }

    /// Porter stemming for English only; SQLite ships no other stemmer.
    static func stems(_ language: String?) -> Bool {
        guard let language = language?.lowercased() else { return false }
        return language == "en" || language == "english" || language.hasPrefix("en-") || language.hasPrefix("en_")
    }
}

/// Builder-style factories, as in Couchbase Lite's `IndexBuilder`.
public enum IndexBuilder {
    /// A value index on builder expressions.
    public static func valueIndex(items: ValueIndexItem...) -> ValueIndexConfiguration {
        ValueIndexConfiguration(items.map(\.expression))
    }

    /// A full-text index on properties.
    public static func fullTextIndex(items: FullTextIndexItem...) -> FullTextIndexConfiguration {
        FullTextIndexConfiguration(items.map(\.property))
    }
}

/// One key of a value index.
public struct ValueIndexItem: Sendable {
    let expression: String

    /// A property path.
    public static func property(_ path: String) -> ValueIndexItem { ValueIndexItem(expression: SQLPPRenderer.path(path)) }
    /// Any builder expression.
    public static func expression(_ expression: Expression) -> ValueIndexItem {
        ValueIndexItem(expression: SQLPPRenderer.render(expression.tree))
    }
}

/// One property of a full-text index.
public struct FullTextIndexItem: Sendable {
    let property: String

    /// A property path to index, such as `"name"` or `"address.city"`.
    public static func property(_ path: String) -> FullTextIndexItem { FullTextIndexItem(property: path) }
}

extension FullTextIndexConfiguration {
    /// Accented letters match their plain forms.
    public func ignoreAccents(_ ignore: Bool) -> FullTextIndexConfiguration {
        var copy = self
        copy.ignoreAccents = ignore
        return copy
    }

    /// The language whose stemming rules apply (nil: none).
    public func language(_ language: String?) -> FullTextIndexConfiguration {
        var copy = self
        copy.language = language
        return copy
    }
}
