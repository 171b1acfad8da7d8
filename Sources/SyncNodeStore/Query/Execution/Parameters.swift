import Foundation

/// Values for a query's `$name` parameters.
///
/// ```swift
/// let query = try db.createQuery("SELECT name FROM hotels WHERE city = $city")
/// query.parameters = Parameters().setString("Paris", forName: "city")
/// ```
/// A parameter left unset reads as MISSING. Names may be given with or
/// without the `$` they have in the query (`"city"` or `"$city"`).
public struct Parameters: Sendable, Hashable {
    private(set) var values: [String: DocumentValue] = [:]

    /// No values: every parameter reads as MISSING.
    public init() {}

    /// When a name is given both ways (`"city"` and `"$city"`), the one without `$` wins.
    public init(_ values: [String: DocumentValue]) {
        for (name, value) in values where name.hasPrefix("$") { self.values[Self.bare(name)] = value }
        for (name, value) in values where !name.hasPrefix("$") { self.values[name] = value }
    }

    /// The value set for `name`.
    public func value(forName name: String) -> DocumentValue? { values[Self.bare(name)] }

    private static func bare(_ name: String) -> String {
        name.hasPrefix("$") ? String(name.dropFirst()) : name
    }

    /// A copy with `name` set to a value of any JSON-compatible type (nil means null; see
    /// ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form.
    public func setValue(_ value: Any?, forName name: String) throws -> Parameters {
        with(name, try DocumentValue(any: value))
    }

    /// A copy with `name` set to `value`.
    public func setValue(_ value: DocumentValue, forName name: String) -> Parameters { with(name, value) }
    /// A copy with `name` set to a string; nil sets null (not MISSING).
    public func setString(_ value: String?, forName name: String) -> Parameters { with(name, value.map(DocumentValue.string) ?? .null) }
    /// A copy with `name` set to an integer.
    public func setInt(_ value: Int, forName name: String) -> Parameters { with(name, .int(Int64(value))) }
    /// A copy with `name` set to a 64-bit integer.
    public func setInt64(_ value: Int64, forName name: String) -> Parameters { with(name, .int(value)) }
    /// A copy with `name` set to a number (an integral value as an integer); NaN and the infinities set null.
    public func setDouble(_ value: Double, forName name: String) -> Parameters { with(name, (try? .number(value)) ?? .null) }
    /// A copy with `name` set to `true` or `false`.
    public func setBoolean(_ value: Bool, forName name: String) -> Parameters { with(name, .bool(value)) }
    /// A copy with `name` set to the date's ISO-8601 string (as `setDate` stores dates); nil sets null.
    public func setDate(_ value: Date?, forName name: String) -> Parameters { with(name, value.map { .string(ISODate.string(from: $0)) } ?? .null) }
    /// A copy with `name` set to a JSON array.
    public func setArray(_ value: [DocumentValue], forName name: String) -> Parameters { with(name, .array(value)) }
    /// A copy with `name` set to a JSON object.
    public func setDictionary(_ value: [String: DocumentValue], forName name: String) -> Parameters { with(name, .dictionary(value)) }

    private func with(_ name: String, _ value: DocumentValue) -> Parameters {
        var copy = self
        copy.values[Self.bare(name)] = value
        return copy
    }
}
