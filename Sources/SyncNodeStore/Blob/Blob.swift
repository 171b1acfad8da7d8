import Crypto
import Foundation

/// Binary content stored beside a document: an image, a file, any bytes.
///
/// Set a blob as a property value; when the document is saved the content is
/// written to the database's content-addressed blob store (once per distinct
/// content) and the body keeps only its metadata:
/// `{"@type":"blob","digest":"sha1-…","length":N,"content_type":"…"}`.
/// A blob read from a document loads its content lazily.
public final class Blob: Sendable, Hashable, CustomStringConvertible {
    static let typeKey = "@type"

    /// Whether a canonical body holds a blob (attachments are blobs too).
    static func appears(in body: String) -> Bool { StringScan.contains(body, blobMarker) }

    /// ``appears(in:)-(String)`` for a body's bytes.
    static func appears(in body: [UInt8]) -> Bool { body.withUnsafeBufferPointer { StringScan.contains($0, blobMarker) } }

    private static let blobMarker: StaticString = #""@type":"blob""#
    /// A dictionary with `"@type":"blob"` and only these keys reads as a blob.
    static let metadataKeys: Set<String> = [typeKey, "digest", "length", "content_type", "revpos"]

    /// The MIME type, e.g. `image/jpeg`.
    public let contentType: String
    /// `sha1-` followed by the base64 SHA-1 of the content.
    public let digest: String
    /// The content's size in bytes.
    public let length: Int
    /// For an attachment exchanged with CouchDB-protocol peers: the generation
    /// of the revision it first appeared in (CouchDB's `revpos`), kept as the
    /// peer gave it; nil for blobs saved through this API.
    package let revpos: Int?

    enum Source: Sendable {
        case data(Data)
        /// Content in a file this blob may read at save time.
        case file(URL)
        /// Content spooled from a stream into a temporary file this blob owns
        /// (removed when the blob goes away).
        case spooled(URL)
        /// Content in a database's blob store (or not available on this node yet).
        case store(BlobStore?)
    }
    let source: Source

    /// A blob holding `data` in memory until its document is saved.
    public init(contentType: String, data: Data) {
        self.contentType = contentType
        self.length = data.count
        self.digest = Self.digest(of: data)
        self.source = .data(data)
        self.revpos = nil
    }

    /// A blob whose content is the file at `fileURL`. The file is read once now
    /// (to compute its digest) and copied into the blob store at save time.
    /// - Throws: ``StoreError/io(_:)`` when the file cannot be opened or read.
    public convenience init(contentType: String, fileURL: URL) throws {
        guard let stream = InputStream(url: fileURL) else {
            throw StoreError.io("cannot open \(fileURL.path)")
        }
        let (digest, length) = try Self.digest(of: stream, copyingTo: nil)
        self.init(contentType: contentType, digest: digest, length: length, source: .file(fileURL))
    }

    /// A blob whose content is read from `stream` now, without holding it all
    /// in memory: it is spooled into a temporary file next to nothing else
    /// and moved into the blob store when the document is saved.
    /// - Throws: ``StoreError/io(_:)`` when the temporary file cannot be created or the stream fails, or
    ///   Foundation's error when writing the temporary file fails; the temporary file is removed.
    public convenience init(contentType: String, contentStream stream: InputStream) throws {
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-blob-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil),
              let handle = try? FileHandle(forWritingTo: temp) else {
            throw StoreError.io("cannot create a temporary file for a blob at \(temp.path)")
        }
        defer { try? handle.close() }
        do {
            let (digest, length) = try Self.digest(of: stream, copyingTo: handle)
            self.init(contentType: contentType, digest: digest, length: length, source: .spooled(temp))
        } catch {
            try? FileManager.default.removeItem(at: temp)
            throw error
        }
    }

    deinit {
        if case .spooled(let url) = source { try? FileManager.default.removeItem(at: url) }
    }

    init(contentType: String, digest: String, length: Int, source: Source) {
        self.contentType = contentType
        self.digest = digest
        self.length = length
        self.source = source
        self.revpos = nil
    }

    /// A blob described by stored metadata; nil when the dictionary lacks a digest.
    init?(metadata: [String: DocumentValue], store: BlobStore?) {
        guard case .string(let digest)? = metadata["digest"] else { return nil }
        self.digest = digest
        self.length = Int(metadata["length"]?.int64Value ?? 0)
        self.contentType = metadata["content_type"]?.stringValue ?? "application/octet-stream"
        self.source = .store(store)
        if case .int(let n)? = metadata["revpos"], n >= 0, n < 1_000_000_000 { revpos = Int(n) } else { revpos = nil }
    }

    /// The metadata dictionary stored in document bodies.
    var metadata: [String: DocumentValue] {
        var m: [String: DocumentValue] = [
            Self.typeKey: .string("blob"),
            "digest": .string(digest),
            "length": .int(Int64(length)),
            "content_type": .string(contentType),
        ]
        if let revpos { m["revpos"] = .int(Int64(revpos)) }
        return m
    }

    /// The whole content, or nil when it is not available on this node
    /// (a blob whose document arrived without it, or a deleted file).
    public var content: Data? {
        switch source {
        case .data(let d): return d
        case .file(let url), .spooled(let url): return try? Data(contentsOf: url)
        case .store(let store): return store?.content(digest: digest)
        }
    }

    /// A stream over the content, for large blobs; nil when it is not available.
    public func contentStream() -> InputStream? {
        switch source {
        case .data(let d): return InputStream(data: d)
        case .file(let url), .spooled(let url): return InputStream(url: url)
        case .store(let store): return store?.fileURL(digest: digest).flatMap { InputStream(url: $0) }
        }
    }

    /// The metadata as JSON text.
    public var description: String {
        JSONWriter.string(object: metadata)
    }

    /// Blobs are equal when their digest, content type and length are; where the content lives does not matter.
    public static func == (a: Blob, b: Blob) -> Bool {
        a.digest == b.digest && a.contentType == b.contentType && a.length == b.length
    }

    /// Hashes the digest only, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    static func digest(of data: Data) -> String {
        "sha1-" + Data(Insecure.SHA1.hash(data: data)).base64EncodedString()
    }

    /// Hashes a stream in 64 KiB chunks, optionally copying it to a file.
    static func digest(of stream: InputStream, copyingTo handle: FileHandle?) throws -> (String, Int) {
        var hasher = Insecure.SHA1()
        var length = 0
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n < 0 { throw StoreError.io("reading blob content: \(stream.streamError.map { "\($0)" } ?? "stream error")") }
            if n == 0 { break }
            let chunk = Data(buffer[0..<n])
            hasher.update(data: chunk)
            try handle?.write(contentsOf: chunk)
            length += n
        }
        return ("sha1-" + Data(hasher.finalize()).base64EncodedString(), length)
    }
}
