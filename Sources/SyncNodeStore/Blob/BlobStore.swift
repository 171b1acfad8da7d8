import Crypto
import Foundation
import Synchronization

/// The content-addressed files of a database's blobs, in `<database>/blobs/`.
///
/// A file is named after its digest, written to a temporary name and renamed
/// into place, so a crash never leaves a partial blob under a real name and
/// equal content is stored once.
final class BlobStore: Sendable {
    let directory: URL
    /// MD5 digests already computed, by blob digest (content never changes under a digest).
    private let md5Cache = Mutex<[String: String]>([:])

    init(directory: URL) throws {
        self.directory = directory
        do {
            // The owner's alone, as the rest of the database (a folder made before was 0755: fixed here).
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        } catch {
            throw StoreError.io("cannot create blob directory \(directory.path): \(error.localizedDescription)")
        }
    }

    /// The file name for a digest: its hex form, so no digest can name a path
    /// outside the store (base64 has `/`). Nil for a malformed digest.
    static func fileName(digest: String) -> String? {
        guard digest.hasPrefix("sha1-"), let raw = Data(base64Encoded: String(digest.dropFirst(5))), raw.count == 20 else {
            return nil
        }
        return Hex.string(Array(raw)) + ".blob"
    }

    /// The digest a stored file name stands for.
    static func digest(fileName: String) -> String? {
        guard fileName.hasSuffix(".blob") else { return nil }
        let hex = Array(fileName.utf8.dropLast(5))
        guard hex.count == 40 else { return nil }
        var bytes = [UInt8]()
        for i in stride(from: 0, to: 40, by: 2) {
            guard let b = UInt8(String(decoding: hex[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(b)
        }
        return "sha1-" + Data(bytes).base64EncodedString()
    }

    func fileURL(digest: String) -> URL? {
        file(digest: digest)?.url
    }

    /// The blob's file and its length, from one `stat(2)` (Foundation's attributes also read
    /// the user and group databases, a cost each small attachment served or pulled paid).
    func file(digest: String) -> (url: URL, length: Int)? {
        guard let name = Self.fileName(digest: digest) else { return nil }
        let url = url(named: name)
        var info = stat()
        guard stat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (url, Int(info.st_size))
    }

    func contains(digest: String) -> Bool {
        fileURL(digest: digest) != nil
    }

    func content(digest: String) -> Data? {
        fileURL(digest: digest).flatMap { try? Data(contentsOf: $0) }
    }

    /// `md5-` and the base64 MD5 of a blob's content, the digest CouchDB and
    /// PouchDB exchange for attachments; nil when the content is not here.
    /// Computed once by streaming the file, then kept with it (``BlobMD5Note``)
    /// and in memory.
    func md5(digest: String) -> String? {
        if let known = md5Cache.withLock({ $0[digest] }) { return known }
        guard let url = fileURL(digest: digest) else { return nil }
        if let saved = BlobMD5Note.read(beside: url) {
            remember(saved, for: digest)
            return saved
        }
        guard let stream = InputStream(url: url) else { return nil }
        var hasher = Insecure.MD5()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n < 0 { return nil }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        let md5 = "md5-" + Data(hasher.finalize()).base64EncodedString()
        keep(md5, for: digest, beside: url)
        return md5
    }

    /// Keeps a blob's MD5 with its file and in memory.
    private func keep(_ md5: String, for digest: String, beside url: URL) {
        BlobMD5Note.write(md5, beside: url, temporaryFile: createTemporaryFile)
        remember(md5, for: digest)
    }

    private func remember(_ md5: String, for digest: String) {
        md5Cache.withLock { cache in
            if cache.count >= 10_000 { cache.removeAll(keepingCapacity: true) }
            cache[digest] = md5
        }
    }

    /// Makes sure the blob's content is in this store.
    func store(_ blob: Blob) throws {
        guard let name = Self.fileName(digest: blob.digest) else {
            throw StoreError.invalidValue("blob digest '\(blob.digest)' is not a sha1- digest")
        }
        let target = url(named: name)
        if keepExisting(target) { return }
        switch blob.source {
        case .data(let data):
            try write(data, digest: blob.digest, to: target)
        case .file(let url), .spooled(let url):
            try copy(url, to: target)
        case .store(let other):
            // A blob from another database: copy its file (not through memory) if that database has it.
            guard let source = other?.fileURL(digest: blob.digest) else {
                throw StoreError.notFound(.blob, "content of blob \(blob.digest)")
            }
            try copy(source, to: target)
        }
    }

    private func copy(_ source: URL, to target: URL) throws {
        try place(target, doing: "copying blob from \(source.path)") { try FileManager.default.copyItem(at: source, to: $0) }
    }

    /// Stores raw content received from elsewhere (a peer) and returns its digest; `md5` is its
    /// `md5-` digest when the caller has it already.
    @discardableResult
    func store(data: Data, md5: String? = nil) throws -> String {
        let digest = Blob.digest(of: data)
        guard let name = Self.fileName(digest: digest) else { return digest }
        let target = url(named: name)
        if !keepExisting(target) {
            try write(data, digest: digest, md5: md5, to: target)
        }
        return digest
    }

    /// Names a finished temporary file after its digest, or drops it when the content is here
    /// already; remembers its MD5 (``md5(digest:)``).
    func adopt(_ temp: URL, digest: String, md5: String) throws {
        guard let name = Self.fileName(digest: digest) else {
            try? FileManager.default.removeItem(at: temp)
            throw StoreError.invalidValue("blob digest '\(digest)' is not a sha1- digest")
        }
        let target = url(named: name)
        if keepExisting(target) {
            try? FileManager.default.removeItem(at: temp)
        } else {
            try moveIntoPlace(temp, target)
        }
        keep(md5, for: digest, beside: target)
    }

    /// Makes each of `blobs` durable and names it, then (when `syncingFolder`) the folder,
    /// which makes the names durable. One that cannot be placed is dropped and the others are
    /// placed all the same: a retry then fetches only that one.
    /// - Throws: ``StoreError/io(_:)``, the first blob's that could not be synced or renamed, or
    ///   the folder's.
    func adopt(_ blobs: [WrittenBlob], syncingFolder: Bool) throws {
        var failure: (any Error)?
        for blob in blobs {
            do {
                try Durability.sync(path: blob.temp.path)
                try adopt(blob.temp, digest: blob.digest, md5: blob.md5)
            } catch {
                failure = failure ?? error
                try? FileManager.default.removeItem(at: blob.temp)
            }
        }
        if syncingFolder { try syncDirectory() }
        if let failure { throw failure }
    }

    /// True when the content is there already. Its time is refreshed: compaction
    /// spares unreferenced blobs younger than its grace period, and a save about
    /// to refer to this one again must not lose it to a compaction in between.
    /// One call, so a file compaction removes in between is not reported as there.
    private func keepExisting(_ target: URL) -> Bool {
        // One system call: Foundation's `setAttributes` reads the file's attributes first.
        utimensat(AT_FDCWD, target.path, nil, 0) == 0
    }

    /// The file `name` of the blob folder. Said to be a file: `appendingPathComponent` would
    /// otherwise ask the file system (a `stat(2)` for each blob looked up, written or placed).
    private func url(named name: String) -> URL {
        directory.appendingPathComponent(name, isDirectory: false)
    }

    /// The bytes of every blob (not their MD5 sidecars or files being written).
    func totalBytes() -> Int {
        allDigests().reduce(0) { sum, digest in
            sum + (file(digest: digest)?.length ?? 0)
        }
    }

    func allDigests() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap(Self.digest(fileName:))
    }

    /// When the blob's file was written (distant future when unknown, so it is kept).
    func modified(digest: String) -> Date {
        guard let url = fileURL(digest: digest),
              let date = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date else {
            return .distantFuture
        }
        return date
    }

    func delete(digest: String) {
        guard let url = fileURL(digest: digest) else { return }
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.removeItem(at: BlobMD5Note.sidecar(of: url))
        md5Cache.withLock { _ = $0.removeValue(forKey: digest) }
    }

    /// Removes temporary files a crash left behind: those untouched for an hour. A younger
    /// one may be another process's upload in progress (a CLI command opens the database that
    /// a serving node is streaming an attachment into).
    func removeTemporaryFiles() {
        AbandonedFiles.remove(in: directory, prefix: ".tmp-")
    }

    /// A fresh temporary name. Not a `UUID()`: Foundation opens `/dev/urandom` for each.
    func tempURL() -> URL {
        let random = (0..<2).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined(separator: "-")
        return url(named: ".tmp-\(random)")
    }

    /// A new temporary file, the owner's alone, open for writing: one system call, where
    /// Foundation's `createFile` writes a file of its own and renames it, then opens it again
    /// (four times the calls, in a directory that a pull of many small attachments keeps busy).
    func createTemporaryFile() throws -> (URL, FileHandle) {
        let temp = tempURL()
        let fd = open(temp.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let error = errno
            throw StoreError.io("cannot create a temporary blob file in \(directory.path): \(String(cString: strerror(error)))")
        }
        return (temp, FileHandle(fileDescriptor: fd, closeOnDealloc: true))
    }

    /// Makes the names of the blobs renamed into place durable: an fsync of a file covers its
    /// content, not its directory entry.
    /// - Throws: ``StoreError/io(_:)`` when the disk refuses.
    func syncDirectory() throws {
        try Durability.sync(path: directory.path)
    }

    /// Writes content held in memory as blob `digest`, and keeps its MD5 with it (``md5(digest:)``):
    /// peers name attachments by it, and computed now it spares reading the file back when
    /// the blob is first served (a node serving 1,000 blobs of 100 KB saved through the API
    /// spent 0.2 s of its first pull computing theirs). `md5` is the digest when known already.
    private func write(_ data: Data, digest: String, md5: String? = nil, to target: URL) throws {
        try place(target, doing: "writing blob \(target.lastPathComponent)") { try data.write(to: $0) }
        keep(md5 ?? "md5-" + Data(Insecure.MD5.hash(data: data)).base64EncodedString(), for: digest, beside: target)
    }

    /// Fills a temporary file with `fill` and renames it to `target`, each durable before the
    /// next step; on failure the temporary file goes (an error of `fill` says what was `doing`).
    ///
    /// The content reaches the disk before the name does: after a power cut, a name without
    /// its content (a file emptied by delayed allocation) would pass for that content for good,
    /// since equal names mean equal content here.
    private func place(_ target: URL, doing: String, _ fill: (URL) throws -> Void) throws {
        let temp = tempURL()
        do {
            try fill(temp)
            try Durability.sync(path: temp.path)
        } catch {
            try? FileManager.default.removeItem(at: temp)
            throw error as? StoreError ?? StoreError.io("\(doing): \(error.localizedDescription)")
        }
        try moveIntoPlace(temp, target)
        try syncDirectory()
    }

    private func moveIntoPlace(_ temp: URL, _ target: URL) throws {
        // Whatever wrote it (a copy, Data.write, an upload), the blob is the owner's alone.
        chmod(temp.path, 0o600)
        // rename(2) is atomic and replaces; equal names mean equal content, so a race is harmless.
        if rename(temp.path, target.path) != 0 {
            let err = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temp)
            throw StoreError.io("renaming blob into place: \(err)")
        }
    }
}
