import Foundation

/// Encodes `Encodable` models straight to stored values (no JSON text).
///
/// Optionals that are nil leave their key out; dates become ISO-8601
/// strings, `Data` a blob, URLs and UUIDs strings. A top-level
/// ``DocumentID`` is captured, not stored.
final class ModelEncoder: Encoder {
    private let parent: ModelEncoder?
    private let key: (any CodingKey)?
    private let root: Root
    fileprivate var storage: Slot?
    /// Whether the value encoded here has fixed keys (a struct or a class), so that a save may
    /// keep stored keys it does not name. A dictionary's or an enum's keys are its whole value.
    fileprivate var hasFixedKeys = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private final class Root {
        var identity: DocumentIdentity?
    }

    private init(parent: ModelEncoder?, key: (any CodingKey)?, root: Root) {
        self.parent = parent
        self.key = key
        self.root = root
    }

    /// Built on demand (errors, custom `encode(to:)`): most values never ask.
    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var encoder: ModelEncoder? = self
        while let e = encoder, let key = e.key {
            path.append(key)
            encoder = e.parent
        }
        return path.reversed()
    }

    /// The model's properties and its ``DocumentID``, if it has one.
    /// - Throws: ``StoreError/invalidValue(_:)`` naming the key path of a value
    ///   with no stored form (NaN, an integer over 64 signed bits), or when the
    ///   model does not encode as an object.
    static func encode<T: Encodable>(_ model: T) throws -> EncodedModel {
        let encoder = ModelEncoder(parent: nil, key: nil, root: Root())
        do {
            try model.encode(to: encoder)
        } catch let error as EncodingError {
            guard case .invalidValue(_, let context) = error else { throw StoreError.invalidValue("cannot encode \(T.self): \(error)") }
            let path = context.codingPath.isEmpty ? "" : " at '\(ModelDecoder.render(context.codingPath))'"
            throw StoreError.invalidValue("cannot encode \(T.self)\(path): \(context.debugDescription)")
        }
        guard case .object(let object)? = encoder.storage else {
            throw StoreError.invalidValue("\(T.self) does not encode as an object (a keyed container), so it cannot be a document")
        }
        return EncodedModel(object: object, identity: encoder.root.identity ?? DocumentIdentity.find(in: model))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let builder: ObjectBuilder
        if case .object(let existing)? = storage {
            builder = existing
        } else {
            builder = ObjectBuilder()
            storage = .object(builder)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self, builder: builder))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let builder: ArrayBuilder
        if case .array(let existing)? = storage {
            builder = existing
        } else {
            builder = ArrayBuilder()
            storage = .array(builder)
        }
        return UnkeyedContainer(encoder: self, builder: builder)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }

    fileprivate func nested(_ key: any CodingKey) -> ModelEncoder {
        ModelEncoder(parent: self, key: key, root: root)
    }

    fileprivate var isRoot: Bool { parent == nil }

    /// Notes the model's own ``DocumentID``.
    fileprivate func capture(_ id: DocumentID) { root.identity = id.identity }

    /// A value the coder stores itself rather than asking it to encode
    /// (comparing types first is much cheaper than trying each cast); nil for others.
    fileprivate func leaf<T: Encodable>(_ value: T, key: @autoclosure () -> (any CodingKey)?) throws -> DocumentValue? {
        if T.self == String.self, let s = value as? String { return .string(s) }
        if T.self == Int.self, let i = value as? Int { return .int(Int64(i)) }
        if T.self == Double.self, let d = value as? Double { return try number(d, key: key()) }
        if T.self == Bool.self, let b = value as? Bool { return .bool(b) }
        if T.self == Date.self, let date = value as? Date { return .string(ISODate.string(from: date)) }
        if T.self == Data.self, let data = value as? Data { return .blob(Blob(contentType: "application/octet-stream", data: data)) }
        if T.self == Blob.self, let blob = value as? Blob { return .blob(blob) }
        if T.self == URL.self, let url = value as? URL { return .string(url.absoluteString) }
        if T.self == UUID.self, let uuid = value as? UUID { return .string(uuid.uuidString) }
        if T.self == Decimal.self, let decimal = value as? Decimal { return try stored(key: key()) { try .number(decimal) } }
        return nil
    }

    /// A nested value: a leaf, or whatever it encodes into an encoder of its own (kept open, so
    /// that a nested object still knows which keys it declares).
    fileprivate func box<T: Encodable>(_ value: T, key: @autoclosure () -> any CodingKey) throws -> Slot {
        if let leaf = try leaf(value, key: key()) { return .value(leaf) }
        let encoder = nested(key())
        let style = Mirror(reflecting: value).displayStyle
        encoder.hasFixedKeys = style == .struct || style == .class
        try value.encode(to: encoder)
        return .encoder(encoder)
    }

    fileprivate func number(_ d: Double, key: (any CodingKey)?) throws -> DocumentValue {
        try stored(key: key) { try .number(d) }
    }

    fileprivate func number(_ f: Float, key: (any CodingKey)?) throws -> DocumentValue {
        try stored(key: key) { try .number(f) }
    }

    /// A number conversion whose ``StoreError`` becomes an encoding error at this path.
    private func stored(key: (any CodingKey)?, _ convert: () throws -> DocumentValue) throws -> DocumentValue {
        do {
            return try convert()
        } catch let error as StoreError {
            guard case .invalidValue(let reason) = error else { throw error }
            throw EncodingError.invalidValue(reason, .init(codingPath: codingPath + (key.map { [$0] } ?? []), debugDescription: reason))
        }
    }

    fileprivate func integer<I: BinaryInteger>(_ i: I, key: (any CodingKey)?) throws -> DocumentValue {
        guard let value = Int64(exactly: i) else {
            throw EncodingError.invalidValue(i, .init(codingPath: codingPath + (key.map { [$0] } ?? []), debugDescription: "\(i) does not fit in 64 signed bits"))
        }
        return .int(value)
    }


}

/// A model encoded: its properties, its ``DocumentID``, and which properties it declares.
struct EncodedModel {
    fileprivate let object: ObjectBuilder
    let identity: DocumentIdentity?

    /// The model's properties.
    var values: [String: DocumentValue] { object.members.mapValues(\.finished) }

    /// The model's properties, plus those of `stored` that the model does not declare: at the
    /// top level and inside nested structs and classes, at every level (a dictionary's or an
    /// enum's keys are its value: those are written as they are). A key the model encodes, even as nil (an optional left out), is declared. Of the
    /// stored `_` members only `_attachments` (CouchDB attachments, as blobs) can be there; it is kept.
    func values(keepingUndeclaredIn stored: [String: DocumentValue]) -> [String: DocumentValue] {
        object.merged(over: stored)
    }
}

/// A value being built: containers stay open until their encoder is done.
fileprivate enum Slot {
    case value(DocumentValue)
    case object(ObjectBuilder)
    case array(ArrayBuilder)
    /// A super encoder's output, whatever container it ends up using.
    case encoder(ModelEncoder)

    var finished: DocumentValue {
        switch self {
        case .value(let v): return v
        case .object(let o): return .dictionary(o.members.mapValues(\.finished))
        case .array(let a): return .array(a.elements.map(\.finished))
        case .encoder(let e): return e.storage?.finished ?? .dictionary([:])
        }
    }

    /// The keyed container of a struct or class value, whose undeclared stored keys a save
    /// keeps; nil for anything else (dictionaries, enums, arrays, a custom nested container).
    var fixedKeysObject: ObjectBuilder? {
        guard case .encoder(let e) = self, e.hasFixedKeys, case .object(let o)? = e.storage else { return nil }
        return o
    }
}

private final class ObjectBuilder {
    var members: [String: Slot] = [:]
    /// Keys the model declares but left out, encoding nil (`encodeIfPresent`).
    var absent: Set<String> = []

    func merged(over stored: [String: DocumentValue]) -> [String: DocumentValue] {
        var out: [String: DocumentValue] = [:]
        for (key, slot) in members {
            if let nested = slot.fixedKeysObject, case .dictionary(let inner)? = stored[key] {
                out[key] = .dictionary(nested.merged(over: inner))
            } else {
                out[key] = slot.finished
            }
        }
        for (key, value) in stored where members[key] == nil && !absent.contains(key) && (!key.hasPrefix("_") || key == DocumentCollection.attachmentsKey) {
            out[key] = value
        }
        return out
    }
}

private final class ArrayBuilder {
    var elements: [Slot] = []
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ModelEncoder
    let builder: ObjectBuilder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: DocumentValue, _ key: Key) { builder.members[key.stringValue] = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try encoder.number(value, key: key), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try encoder.number(value, key: key), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try encoder.integer(value, key: key), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try encoder.integer(value, key: key), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // The model's own ID is not part of its body; a nested model's is (a string).
        if T.self == DocumentID.self, encoder.isRoot, let id = value as? DocumentID { encoder.capture(id); return }
        builder.members[key.stringValue] = try encoder.box(value, key: key)
    }

    // Optionals: a nil one is left out, but its key is declared (a save keeps stored properties
    // only where the model has no key for them).
    private func absent(_ key: Key) { builder.absent.insert(key.stringValue) }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { absent(key) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBuilder()
        builder.members[key.stringValue] = .object(nested)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder.nested(key), builder: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayBuilder()
        builder.members[key.stringValue] = .array(nested)
        return UnkeyedContainer(encoder: encoder.nested(key), builder: nested)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: PathKey("super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let encoder = encoder.nested(key)
        builder.members[key.stringValue] = .encoder(encoder)
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: ModelEncoder
    let builder: ArrayBuilder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { builder.elements.count }
    private var key: PathKey { PathKey(count) }

    private func append(_ value: DocumentValue) { builder.elements.append(.value(value)) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try encoder.number(value, key: key)) }
    mutating func encode(_ value: Float) throws { append(try encoder.number(value, key: key)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(try encoder.integer(value, key: key)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(try encoder.integer(value, key: key)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        builder.elements.append(try encoder.box(value, key: key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBuilder()
        let encoder = encoder.nested(key)
        builder.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(encoder: encoder, builder: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayBuilder()
        let encoder = encoder.nested(key)
        builder.elements.append(.array(nested))
        return UnkeyedContainer(encoder: encoder, builder: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = encoder.nested(key)
        builder.elements.append(.encoder(encoder))
        return encoder
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: ModelEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: DocumentValue) { encoder.storage = .value(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try encoder.number(value, key: nil)) }
    mutating func encode(_ value: Float) throws { set(try encoder.number(value, key: nil)) }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(try encoder.integer(value, key: nil)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(try encoder.integer(value, key: nil)) }

    /// A wrapper type encoding its wrapped value: same path, same slot.
    mutating func encode<T: Encodable>(_ value: T) throws {
        if let leaf = try encoder.leaf(value, key: nil) { set(leaf) } else { try value.encode(to: encoder) }
    }
}

/// A blob property of a Codable model. The store's coder keeps blobs as they
/// are; other coders (`JSONEncoder`...) see the metadata dictionary.
extension Blob: Codable {
    private enum Keys: String, CodingKey {
        case type = "@type", digest, length, contentType = "content_type"
    }

    /// Encodes the metadata dictionary (`@type`, `digest`, `length`, `content_type`), never the content; the
    /// store's own coder does not call this and keeps the blob itself.
    /// - Throws: the encoder's `EncodingError`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode("blob", forKey: .type)
        try container.encode(digest, forKey: .digest)
        try container.encode(length, forKey: .length)
        try container.encode(contentType, forKey: .contentType)
    }

    /// A blob described by its metadata; its content is not available.
    /// - Throws: `DecodingError` when `digest` is missing or a member has the wrong type.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            contentType: try container.decodeIfPresent(String.self, forKey: .contentType) ?? "application/octet-stream",
            digest: try container.decode(String.self, forKey: .digest),
            length: try container.decodeIfPresent(Int.self, forKey: .length) ?? 0,
            source: .store(nil))
    }
}
