import Foundation

/// A value slot in a mutable container: nested containers stay live objects
/// once handed out, so `doc.dictionary(forKey: "address")?.setString(...)`
/// edits the document, as in Couchbase Lite.
enum MutableSlot {
    case value(DocumentValue)
    /// A member of a stored body, as its canonical JSON text, parsed only when read: saving an
    /// edit of one property writes the others back byte for byte, unparsed.
    case stored(StoredMember)
    case dictionary(MutableDictionary)
    case array(MutableArray)

    var snapshot: DocumentValue {
        switch self {
        case .value(let v): return v
        case .stored(let member): return member.value
        case .dictionary(let d): return .dictionary(d.snapshot())
        case .array(let a): return .array(a.snapshot())
        }
    }
}

/// A member's value left as text where it stands in a stored body: the body and the value's
/// byte range (no Substring is made: finding its bounds as String indices cost more than
/// finding the value's end).
struct StoredMember {
    let body: String
    let range: Range<Int>

    /// The value parsed. Stored bodies were checked when written; an unreadable member reads as null.
    var value: DocumentValue {
        var body = body
        return body.withUTF8 { buffer in try? JSONParser.parseValue(in: buffer, at: range.lowerBound, depth: 1).0 } ?? .null
    }
}

extension JSONWriter {
    /// Writes a slot as its snapshot would be written, without making the snapshot.
    mutating func write(_ slot: MutableSlot) {
        switch slot {
        case .value(let v): write(v)
        case .stored(let member):
            // The body's bytes are contiguous (a String read from SQLite); the fallback copies.
            if member.body.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[member.range])) }) == nil {
                bytes.append(contentsOf: Array(member.body.utf8)[member.range])
            }
        case .dictionary(let d): writeObject(d.storage) { writer, slot in writer.write(slot) }
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, slot) in a.storage.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(slot)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }
}

/// A JSON object that can be edited. ``MutableDocument`` is one too.
///
/// Not `Sendable`: edit it on one task, then save it.
public class MutableDictionary: DictionaryProtocol {
    var storage: [String: MutableSlot]

    /// An empty dictionary.
    public init() { storage = [:] }

    init(_ values: [String: DocumentValue]) {
        storage = values.mapValues { .value($0) }
    }

    init(storage: [String: MutableSlot]) {
        self.storage = storage
    }

    /// The members of the stored body `json` as ``MutableSlot/stored(_:)`` slots: each value's
    /// extent is found, none is parsed.
    /// - Throws: ``StoreError/invalidJSON(_:)`` when `json` is not a JSON object.
    static func storedSlots(of json: String) throws(StoreError) -> [String: MutableSlot] {
        try JSONParser.reading(json) { buffer, start throws(StoreError) in
            var slots = [String: MutableSlot](minimumCapacity: 16)
            let end = try JSONParser.members(ofObjectIn: buffer, at: start, depth: 0) { name, valueStart throws(StoreError) in
                let valueEnd = try JSONSkimmer.end(ofValueIn: buffer, at: valueStart, depth: 1)
                slots[name] = .stored(StoredMember(body: json, range: valueStart..<valueEnd))
                return valueEnd
            }
            return (slots, end)
        }
    }

    /// The slot of `key`, with a stored member parsed into a value (once: it replaces the text).
    private func readSlot(forKey key: String) -> MutableSlot? {
        guard case .stored(let member)? = storage[key] else { return storage[key] }
        let slot = MutableSlot.value(member.value)
        storage[key] = slot
        return slot
    }

    /// A dictionary holding `data` (Foundation values: see ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form.
    public convenience init(data: [String: Any]) throws {
        self.init(try data.mapValues { try DocumentValue(any: $0) })
    }

    /// The number of properties.
    public var count: Int { storage.count }
    /// The property names, in UTF-8 byte order.
    public var keys: [String] { storage.keys.sorted(by: JSONWriter.utf8Order) }
    /// The current value of property `key` (a snapshot of a nested container), or nil when it is absent.
    public func documentValue(forKey key: String) -> DocumentValue? { readSlot(forKey: key)?.snapshot }

    /// The nested dictionary, live: edits to it change this dictionary.
    public func dictionary(forKey key: String) -> MutableDictionary? {
        switch readSlot(forKey: key) {
        case .dictionary(let d)?: return d
        case .value(.dictionary(let values))?:
            let d = MutableDictionary(values)
            storage[key] = .dictionary(d)
            return d
        default: return nil
        }
    }

    /// The nested array, live: edits to it change this dictionary.
    public func array(forKey key: String) -> MutableArray? {
        switch readSlot(forKey: key) {
        case .array(let a)?: return a
        case .value(.array(let values))?:
            let a = MutableArray(values)
            storage[key] = .array(a)
            return a
        default: return nil
        }
    }

    /// Sets a value; `nil` removes the key (use `.null` to store JSON null).
    public func setDocumentValue(_ value: DocumentValue?, forKey key: String) {
        storage[key] = value.map { .value($0) }
    }

    /// Sets a Foundation value (see ``DocumentValue/init(any:)``); nil removes the key.
    ///
    /// A ``MutableDictionary`` or ``MutableArray`` is stored by reference, not copied: later edits to it
    /// change this dictionary too.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form; the dictionary is unchanged.
    public func setValue(_ value: Any?, forKey key: String) throws {
        switch value {
        case nil: storage[key] = nil
        case let d as MutableDictionary: storage[key] = .dictionary(d)
        case let a as MutableArray: storage[key] = .array(a)
        case let v?: storage[key] = .value(try DocumentValue(any: v))
        }
    }

    /// Stores a string; nil removes the key.
    public func setString(_ value: String?, forKey key: String) { setDocumentValue(value.map { .string($0) }, forKey: key) }
    /// Stores an integer.
    public func setInt(_ value: Int, forKey key: String) { setDocumentValue(.int(Int64(value)), forKey: key) }
    /// Stores a 64-bit integer.
    public func setInt64(_ value: Int64, forKey key: String) { setDocumentValue(.int(value), forKey: key) }
    /// Stores a double; a NaN or infinite value (which JSON cannot hold) stores null.
    public func setDouble(_ value: Double, forKey key: String) {
        setDocumentValue((try? DocumentValue.number(value)) ?? .null, forKey: key)
    }
    /// Stores a float as the decimal it prints as (0.1, not 0.10000000149011612).
    public func setFloat(_ value: Float, forKey key: String) { setDocumentValue((try? DocumentValue.number(value)) ?? .null, forKey: key) }
    /// Stores `true` or `false`.
    public func setBoolean(_ value: Bool, forKey key: String) { setDocumentValue(.bool(value), forKey: key) }
    /// Stores the date as an ISO-8601 string.
    public func setDate(_ value: Date?, forKey key: String) { setString(value.map(ISODate.string(from:)), forKey: key) }
    /// Stores a blob (written to the blob store when the document is saved); nil removes the key.
    public func setBlob(_ value: Blob?, forKey key: String) { setDocumentValue(value.map { .blob($0) }, forKey: key) }
    /// Stores `value` by reference, so later edits to it change this dictionary; nil removes the key.
    public func setArray(_ value: MutableArray?, forKey key: String) { storage[key] = value.map { .array($0) } }
    /// Stores a copy of the array's elements; nil removes the key.
    public func setArray(_ value: ArrayObject?, forKey key: String) { setDocumentValue(value.map { .array($0.storage) }, forKey: key) }
    /// Stores `value` by reference, so later edits to it change this dictionary; nil removes the key.
    public func setDictionary(_ value: MutableDictionary?, forKey key: String) { storage[key] = value.map { .dictionary($0) } }
    /// Stores a copy of the object's members; nil removes the key.
    public func setDictionary(_ value: DictionaryObject?, forKey key: String) { setDocumentValue(value.map { .dictionary($0.storage) }, forKey: key) }

    /// Removes the key; nothing happens when it is absent.
    public func removeValue(forKey key: String) { storage[key] = nil }

    /// Replaces all properties with `data` (Foundation values: see ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form; the dictionary is unchanged.
    public func setData(_ data: [String: Any]) throws {
        storage = try data.mapValues { .value(try DocumentValue(any: $0)) }
    }

    /// Replaces all properties with the JSON object in `json`.
    /// - Throws: ``StoreError/invalidJSON(_:)`` when `json` is not valid JSON, is not an object, or nests
    ///   deeper than 256 levels; the dictionary is unchanged.
    public func setJSON(_ json: String) throws {
        storage = try JSONParser.parseObject(json).mapValues { .value($0) }
    }

    /// The current content as immutable values.
    public func snapshot() -> [String: DocumentValue] { storage.mapValues(\.snapshot) }
}

/// A JSON array that can be edited. Not `Sendable`.
public final class MutableArray: ArrayProtocol {
    var storage: [MutableSlot]

    /// An empty array.
    public init() { storage = [] }

    init(_ values: [DocumentValue]) { storage = values.map { .value($0) } }

    /// An array holding `data` (Foundation values: see ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form.
    public convenience init(data: [Any]) throws {
        self.init(try data.map { try DocumentValue(any: $0) })
    }

    /// The number of elements.
    public var count: Int { storage.count }
    /// The current element at `index` (a snapshot of a nested container), or nil when it is out of range.
    public func documentValue(at index: Int) -> DocumentValue? {
        storage.indices.contains(index) ? storage[index].snapshot : nil
    }

    /// The nested dictionary at `index`, live.
    public func dictionary(at index: Int) -> MutableDictionary? {
        guard storage.indices.contains(index) else { return nil }
        switch storage[index] {
        case .dictionary(let d): return d
        case .value(.dictionary(let values)):
            let d = MutableDictionary(values)
            storage[index] = .dictionary(d)
            return d
        default: return nil
        }
    }

    /// The nested array at `index`, live.
    public func array(at index: Int) -> MutableArray? {
        guard storage.indices.contains(index) else { return nil }
        switch storage[index] {
        case .array(let a): return a
        case .value(.array(let values)):
            let a = MutableArray(values)
            storage[index] = .array(a)
            return a
        default: return nil
        }
    }

    private static func slot(_ value: Any?) throws -> MutableSlot {
        switch value {
        case let d as MutableDictionary: return .dictionary(d)
        case let a as MutableArray: return .array(a)
        default: return .value(try DocumentValue(any: value))
        }
    }

    /// Appends a Foundation value (nil appends JSON null); a ``MutableDictionary`` or ``MutableArray`` is
    /// appended by reference.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form.
    public func append(_ value: Any?) throws { storage.append(try Self.slot(value)) }
    /// Appends a document value.
    public func append(documentValue value: DocumentValue) { storage.append(.value(value)) }

    /// Inserts a Foundation value at `index` (0...count); nil inserts JSON null.
    /// - Throws: ``StoreError/invalidValue(_:)`` when `index` is out of range or the value has no JSON form.
    public func insert(_ value: Any?, at index: Int) throws {
        guard (0...storage.count).contains(index) else { throw StoreError.invalidValue("index \(index) out of range 0...\(storage.count)") }
        storage.insert(try Self.slot(value), at: index)
    }

    /// Replaces the element at `index` (0..<count) with a Foundation value; nil stores JSON null.
    /// - Throws: ``StoreError/invalidValue(_:)`` when `index` is out of range or the value has no JSON form.
    public func setValue(_ value: Any?, at index: Int) throws {
        guard storage.indices.contains(index) else { throw StoreError.invalidValue("index \(index) out of range 0..<\(storage.count)") }
        storage[index] = try Self.slot(value)
    }

    /// Removes the element at `index`; an index out of range is ignored.
    public func remove(at index: Int) {
        if storage.indices.contains(index) { storage.remove(at: index) }
    }

    /// Replaces all elements with `data` (Foundation values: see ``DocumentValue/init(any:)``).
    /// - Throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form; the array is unchanged.
    public func setData(_ data: [Any]) throws { storage = try data.map { try Self.slot($0) } }

    /// Replaces all elements with the JSON array in `json`.
    /// - Throws: ``StoreError/invalidJSON(_:)`` when `json` is not valid JSON or not an array; the array is
    ///   unchanged.
    public func setJSON(_ json: String) throws {
        guard case .array(let values) = try JSONParser.parse(json) else {
            throw StoreError.invalidJSON("expected a JSON array")
        }
        storage = values.map { .value($0) }
    }

    /// The current elements as immutable values, nested containers included.
    public func snapshot() -> [DocumentValue] { storage.map(\.snapshot) }
}
