import Foundation

/// Read access to a JSON object: documents, nested dictionaries and query
/// results share these typed accessors.
///
/// A missing key reads as the type's default (`nil`, `0`, `false`); use
/// ``contains(key:)`` to tell "absent" from "present with the default value".
public protocol DictionaryProtocol {
    /// The number of properties.
    var count: Int { get }
    /// The property names, in UTF-8 byte order.
    var keys: [String] { get }
    /// The stored value of a property, or nil when it is absent.
    func documentValue(forKey key: String) -> DocumentValue?
}

extension DictionaryProtocol {
    /// True when `key` is present, even with a JSON `null` value; the way to tell an absent key from one
    /// that holds the default the typed getters return.
    public func contains(key: String) -> Bool { documentValue(forKey: key) != nil }

    /// The value in its Foundation form: `String`, `Int`, `Double`, `Bool`,
    /// `NSNull`, ``ArrayObject``, ``DictionaryObject`` or ``Blob``; nil when absent.
    public func value(forKey key: String) -> Any? { documentValue(forKey: key).map(Self.boxed) }

    /// The value for `key` if it is a string; nil when absent or of another type (numbers are not converted).
    public func string(forKey key: String) -> String? { documentValue(forKey: key)?.stringValue }
    /// The value for `key` as an `Int`, with the conversions of ``int64(forKey:)``.
    public func int(forKey key: String) -> Int { Int(truncatingIfNeeded: int64(forKey: key)) }
    /// The value for `key` as an `Int64`: doubles are truncated toward zero (0 when not finite or beyond
    /// ±9.2e18), booleans read as 1 or 0, anything else (and an absent key) as 0.
    public func int64(forKey key: String) -> Int64 { documentValue(forKey: key)?.int64Value ?? 0 }
    /// The value for `key` as a `Double`: integers are converted, booleans read as 1 or 0, anything else
    /// (and an absent key) as 0.
    public func double(forKey key: String) -> Double { documentValue(forKey: key)?.doubleValue ?? 0 }
    /// The value of ``double(forKey:)`` rounded to the nearest `Float`.
    public func float(forKey key: String) -> Float { Float(double(forKey: key)) }
    /// Nil unless the value is a number (not a boolean).
    public func number(forKey key: String) -> Double? {
        switch documentValue(forKey: key) {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: return nil
        }
    }
    /// The truthiness of the value for `key`: false for an absent key, `null`, `false` and the number 0;
    /// true for anything else, including every string (`"false"` and `""` too), array and dictionary.
    public func boolean(forKey key: String) -> Bool { documentValue(forKey: key)?.booleanValue ?? false }
    /// Parses an ISO-8601 string; nil when absent or not a date.
    public func date(forKey key: String) -> Date? { string(forKey: key).flatMap(ISODate.date(from:)) }
    /// The blob for `key`; nil when absent or not blob metadata (a dictionary with `"@type": "blob"`).
    public func blob(forKey key: String) -> Blob? { documentValue(forKey: key)?.blobValue }
    /// The JSON array for `key` as a read-only ``ArrayObject``; nil when absent or not an array.
    public func array(forKey key: String) -> ArrayObject? {
        if case .array(let a)? = documentValue(forKey: key) { return ArrayObject(a) }
        return nil
    }
    /// The JSON object for `key` as a read-only ``DictionaryObject``; nil when absent or not an object
    /// (blob metadata reads as a ``Blob``, not a dictionary).
    public func dictionary(forKey key: String) -> DictionaryObject? {
        if case .dictionary(let d)? = documentValue(forKey: key) { return DictionaryObject(d) }
        return nil
    }

    /// All properties in Foundation form, nested values as plain arrays and dictionaries.
    public func toDictionary() -> [String: Any] {
        var out: [String: Any] = [:]
        for key in keys { out[key] = documentValue(forKey: key)?.anyValue }
        return out
    }

    /// All properties as canonical JSON text (sorted keys, no whitespace).
    public func toJSON() -> String {
        var dict: [String: DocumentValue] = [:]
        for key in keys { dict[key] = documentValue(forKey: key) }
        return JSONWriter.string(object: dict)
    }

    static func boxed(_ value: DocumentValue) -> Any {
        switch value {
        case .array(let a): return ArrayObject(a)
        case .dictionary(let d): return DictionaryObject(d)
        default: return value.anyValue
        }
    }
}

/// Read access to a JSON array by index; an index out of range reads as the default.
public protocol ArrayProtocol {
    /// The number of elements.
    var count: Int { get }
    /// The stored value at `index`, or nil when out of range.
    func documentValue(at index: Int) -> DocumentValue?
}

extension ArrayProtocol {
    /// The element in its Foundation form (see ``DictionaryProtocol/value(forKey:)``), with nested arrays and
    /// objects as ``ArrayObject`` and ``DictionaryObject``; nil when `index` is out of range.
    public func value(at index: Int) -> Any? { documentValue(at: index).map(DictionaryObject.boxed) }
    /// The element if it is a string; nil when out of range or of another type.
    public func string(at index: Int) -> String? { documentValue(at: index)?.stringValue }
    /// The element as an `Int`, with the conversions of ``int64(at:)``.
    public func int(at index: Int) -> Int { Int(truncatingIfNeeded: int64(at: index)) }
    /// The element as an `Int64`: doubles are truncated toward zero (0 when not finite or beyond ±9.2e18),
    /// booleans read as 1 or 0, anything else (and an index out of range) as 0.
    public func int64(at index: Int) -> Int64 { documentValue(at: index)?.int64Value ?? 0 }
    /// The element as a `Double`: integers are converted, booleans read as 1 or 0, anything else (and an
    /// index out of range) as 0.
    public func double(at index: Int) -> Double { documentValue(at: index)?.doubleValue ?? 0 }
    /// The value of ``double(at:)`` rounded to the nearest `Float`.
    public func float(at index: Int) -> Float { Float(double(at: index)) }
    /// The truthiness of the element: false when out of range, `null`, `false` or the number 0; true for
    /// anything else, including every string, array and dictionary.
    public func boolean(at index: Int) -> Bool { documentValue(at: index)?.booleanValue ?? false }
    /// The element parsed as an ISO-8601 string (with or without fractional seconds); nil when out of range,
    /// not a string, or not a date.
    public func date(at index: Int) -> Date? { string(at: index).flatMap(ISODate.date(from:)) }
    /// The element if it is a blob; nil when out of range or of another type.
    public func blob(at index: Int) -> Blob? { documentValue(at: index)?.blobValue }
    /// The element as a read-only ``ArrayObject``; nil when out of range or not an array.
    public func array(at index: Int) -> ArrayObject? {
        if case .array(let a)? = documentValue(at: index) { return ArrayObject(a) }
        return nil
    }
    /// The element as a read-only ``DictionaryObject``; nil when out of range or not an object.
    public func dictionary(at index: Int) -> DictionaryObject? {
        if case .dictionary(let d)? = documentValue(at: index) { return DictionaryObject(d) }
        return nil
    }

    /// The elements in Foundation form.
    public func toArray() -> [Any] { (0..<count).compactMap { documentValue(at: $0)?.anyValue } }

    /// The elements as canonical JSON text.
    public func toJSON() -> String {
        JSONWriter.string(.array((0..<count).compactMap { documentValue(at: $0) }))
    }
}

/// An immutable JSON object nested in a document.
public struct DictionaryObject: DictionaryProtocol, Sendable, Hashable {
    let storage: [String: DocumentValue]

    /// A read-only object with these members.
    public init(_ storage: [String: DocumentValue]) { self.storage = storage }

    /// The number of members.
    public var count: Int { storage.count }
    /// The member names, in UTF-8 byte order.
    public var keys: [String] { storage.keys.sorted(by: JSONWriter.utf8Order) }
    /// The stored value of member `key`, or nil when it is absent.
    public func documentValue(forKey key: String) -> DocumentValue? { storage[key] }

    /// A mutable copy.
    public func toMutable() -> MutableDictionary { MutableDictionary(storage) }
}

/// An immutable JSON array nested in a document.
public struct ArrayObject: ArrayProtocol, Sendable, Hashable {
    let storage: [DocumentValue]

    /// A read-only array of these elements.
    public init(_ storage: [DocumentValue]) { self.storage = storage }

    /// The number of elements.
    public var count: Int { storage.count }
    /// The stored element at `index`, or nil when it is out of range (negative indices included).
    public func documentValue(at index: Int) -> DocumentValue? {
        storage.indices.contains(index) ? storage[index] : nil
    }

    /// A mutable copy.
    public func toMutable() -> MutableArray { MutableArray(storage) }
}
