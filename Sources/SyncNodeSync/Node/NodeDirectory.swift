import Foundation
import Logging
import Synchronization
import SyncNodeStore

/// A node's data directory: its databases (`NAME.syncnode/`) and, in
/// `.node/`, the node's stable UUID and its TLS identity.
///
/// Databases are opened on first use and kept open until ``closeAll()``.
public final class NodeDirectory: Sendable {
    /// The directory.
    public let url: URL
    /// Where the node's own files are (`.node/`).
    public var home: NodeHome { NodeHome(directory: url) }
    /// The node's stable UUID (peers key their checkpoints on it).
    public let uuid: String
    let logger: Logger
    private let open = Mutex<[String: Database]>([:])
    /// Held while a database is opened or deleted (not while it is used): an open racing a
    /// deletion must not make the database again, empty, under the deleted name.
    private let lifecycle = NSLock()
    private let watchers = Mutex<[UUID: AsyncStream<[String]>.Continuation]>([:])
    /// The policy, once set (nil inside: set to none, which databases opened later also get).
    private let tombstones = Mutex<TombstonePolicy??>(nil)

    /// The tombstone policy of every database served from here, those open now and those
    /// opened later (`serve --tombstone-ttl`); nil, the default, keeps tombstones forever.
    public var tombstonePolicy: TombstonePolicy? {
        get { tombstones.withLock { $0 ?? nil } }
        set {
            tombstones.withLock { $0 = newValue }
            for db in open.withLock({ Array($0.values) }) { db.tombstonePolicy = newValue }
        }
    }

    /// Opens (creating if needed) the data directory at `url`, making the node's UUID on first use and
    /// restricting the directory to its owner (mode 0700).
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the directory or its UUID file cannot be
    ///   created, written or given its permissions, or when the UUID file is unreadable or holds no
    ///   UUID (the message names the file and what to do: a new identity is never made silently).
    public init(url: URL, logger: Logger = Logger(label: "syncnode.node")) throws {
        self.url = url
        self.logger = logger
        let home = NodeHome(directory: url)
        let meta = home.folder, uuidFile = home.uuidFile
        do {
            try FileManager.default.createDirectory(at: meta, withIntermediateDirectories: true)
            // The node's data and secrets are the owner's alone, whatever the umask.
            for directory in [url, meta] { try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path) }
            if let data = FileManager.default.contents(atPath: uuidFile.path) {
                // Peers key their checkpoints and trust on this UUID: a damaged file must not
                // quietly become a new identity.
                let existing = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard UUID(uuidString: existing) != nil else { throw Self.damagedUUID(uuidFile) }
                uuid = existing
            } else if FileManager.default.fileExists(atPath: uuidFile.path) {
                throw Self.damagedUUID(uuidFile)
            } else {
                let fresh = UUID().uuidString.lowercased()
                try Data(fresh.utf8).write(to: uuidFile, options: .atomic)
                uuid = fresh
            }
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError.invalidConfiguration("cannot use data directory \(url.path): \(error.localizedDescription)")
        }
        Database.removeDeletedLeftovers(in: url)
    }

    private static func damagedUUID(_ file: URL) -> SyncError {
        .invalidConfiguration("\(file.path) does not hold a UUID: it is the node's identity, which peers key their checkpoints and trust on. Restore it from a backup (or write the UUID `GET /` reported before); only delete it to make this node a new one to every peer")
    }

    /// The node's TLS identity, made and saved on first use.
    ///
    /// Its certificate names the machine's host name, that name under `.local`
    /// (its mDNS name, which follows the machine across address changes) and
    /// the IPv4 addresses it has when the identity is made, so clients that
    /// trust `cert.pem` and check names can connect by any of them. The
    /// certificate is not re-issued when addresses change later: peers pin the
    /// SHA-256 of the whole certificate (as Syncthing's device IDs do), so a new
    /// one would be a new identity to every peer. Connect by the `.local` name then.
    /// - Throws: ``SyncError/invalidIdentity(_:)`` when the saved files cannot be read or do not match, or a
    ///   new identity cannot be saved.
    public func tlsIdentity() throws -> TLSIdentity {
        try TLSIdentity.persistent(in: tlsDirectory, commonName: "syncnode", hosts: { Self.certificateHosts() })
    }

    /// The node's TLS identity when one was made (by `serve` or `identity`), without making one.
    /// - Throws: as ``tlsIdentity()``, when the saved files cannot be read or do not match.
    public func existingTLSIdentity() throws -> TLSIdentity? {
        FileManager.default.fileExists(atPath: tlsDirectory.path) ? try tlsIdentity() : nil
    }

    private var tlsDirectory: URL { home.tlsFolder }

    /// Retires the node's TLS identity and makes a new one; returns the retired
    /// fingerprint (nil when there was none) and the new identity. The retired
    /// files are kept in `.node/tls-retired-<time>/` (the key still 0600).
    /// Peers that pinned or trusted the old fingerprint must be told the new one;
    /// a running listener goes on with the old until it restarts.
    /// - Throws: ``SyncError/invalidIdentity(_:)`` when the old files cannot be moved aside or the new
    ///   identity cannot be saved.
    public func rotateTLSIdentity() throws -> (retired: String?, identity: TLSIdentity) {
        let folder = tlsDirectory
        var retired: String?
        if FileManager.default.fileExists(atPath: folder.path) {
            retired = try? tlsIdentity().fingerprint
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let stamp = format.string(from: Date()).replacingOccurrences(of: ":", with: "")
            let kept = home.retiredTLSFolder(stamp: stamp)
            do {
                try FileManager.default.moveItem(at: folder, to: kept)
            } catch {
                throw SyncError.invalidIdentity("cannot retire \(folder.path): \(error.localizedDescription)")
            }
        }
        return (retired, try tlsIdentity())
    }

    /// The names and addresses a new certificate is made for.
    static func certificateHosts() -> [String] {
        let name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
        let names = name.isEmpty || name == "localhost" ? [] : [name, name + ".local"]
        return names + LocalAddresses.ipv4()
    }

    /// The credential a node serves with when it is given none: user `admin`
    /// and a random password, made on first use and kept in
    /// `.node/credential.json` (mode 0600), so it stays the same across restarts.
    /// An unreadable or incomplete file is replaced by a new credential.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be written.
    public func generatedCredential() throws -> (user: String, password: String) {
        let file = home.credentialFile
        if let data = FileManager.default.contents(atPath: file.path),
           let saved = try? DocumentValue(json: String(decoding: data, as: UTF8.self)),
           case .string(let user)? = saved["user"], case .string(let password)? = saved["password"], !user.isEmpty, !password.isEmpty {
            return (user, password)
        }
        let password = UserStore.randomPassword()
        let text = DocumentValue.dictionary(["user": "admin", "password": .string(password)]).toJSON() + "\n"
        guard FileManager.default.createFile(atPath: file.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw SyncError.invalidConfiguration("cannot write the node's credential \(file.path)")
        }
        return ("admin", password)
    }

    /// The secret that signs session cookies (``SessionCookies``): 32 random
    /// bytes in `.node/session-secret` (mode 0600), made on first use.
    func sessionSecret() throws -> Data {
        let file = home.sessionSecretFile
        if let existing = try? Data(contentsOf: file), existing.count == 32 { return existing }
        var generator = SystemRandomNumberGenerator()
        let secret = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        do {
            guard FileManager.default.createFile(atPath: file.path, contents: secret, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
        } catch {
            throw SyncError.invalidConfiguration("cannot write the session secret \(file.path): \(error.localizedDescription)")
        }
        return secret
    }

    /// The names of the databases in the directory, sorted.
    public func databaseNames() -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return entries.filter { $0.hasSuffix(".syncnode") }.map { String($0.dropLast(9)) }
            .filter { Database.exists(name: $0, directory: url) }.sorted()
    }

    /// The databases every signed-in principal may read (their `_security` lists no members
    /// or readers): what discovery may name to the whole LAN.
    public func openDatabaseNames() -> [String] {
        databaseNames().filter { name in
            (try? database(name)).flatMap { $0 }.map { (try? DatabaseSecurity.of($0).isOpen) ?? false } ?? false
        }
    }

    /// The open database `name`; nil when it does not exist and `create` is false.
    ///
    /// It is opened on first use and stays open (shared by every caller) until ``closeAll()`` or
    /// ``deleteDatabase(_:)``.
    /// - Throws: the errors of `Database.init(name:config:)`: `StoreError.invalidName` for a
    ///   name that breaks the rules, `StoreError.io` or `StoreError.storage` when it cannot be
    ///   created or opened.
    public func database(_ name: String, create: Bool = false) throws -> Database? {
        if let db = open.withLock({ $0[name] }) { return db }
        lifecycle.lock()
        defer { lifecycle.unlock() }
        if let db = open.withLock({ $0[name] }) { return db }
        let existed = Database.exists(name: name, directory: url)
        guard create || existed else { return nil }
        let db = try Database(name: name, config: DatabaseConfiguration(directory: url))
        let result = open.withLock { o in
            if let existing = o[name] {
                try? db.close()
                return existing
            }
            o[name] = db
            return db
        }
        if result === db, let policy = tombstones.withLock({ $0 }) { db.tombstonePolicy = policy }
        if !existed { databasesChanged() }
        return result
    }

    /// Serves `database`, which the app opened itself, instead of opening it again: the node and
    /// the app then share one `Database` (its change listeners, its writer).
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when it is not in this directory, or
    ///   another `Database` of that name is open here already.
    public func adopt(_ database: Database) throws {
        guard database.path.deletingLastPathComponent().standardizedFileURL.path == url.standardizedFileURL.path else {
            throw SyncError.invalidConfiguration("database '\(database.name)' is in \(database.path.deletingLastPathComponent().path), not in the node's directory \(url.path)")
        }
        lifecycle.lock()
        defer { lifecycle.unlock() }
        let adopted = open.withLock { o -> Bool in
            if let existing = o[database.name] { return existing === database }
            o[database.name] = database
            return true
        }
        guard adopted else {
            throw SyncError.invalidConfiguration("another Database named '\(database.name)' is open in \(url.path) already")
        }
    }

    /// The directory's database names, now and after every creation or deletion
    /// through this object (for advertising what the node serves).
    public func databaseNameUpdates() -> AsyncStream<[String]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        watchers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.watchers.withLock { _ = $0.removeValue(forKey: id) } }
        continuation.yield(databaseNames())
        return stream
    }

    /// Tells ``databaseNameUpdates()`` watchers to look again (a database was made, deleted or its access changed).
    func databasesChanged() {
        let names = databaseNames()
        for watcher in watchers.withLock({ Array($0.values) }) { watcher.yield(names) }
    }

    /// Closes and deletes the database `name`.
    /// - Throws: `StoreError.notFound` (`StoreError.Subject.database`) when it does not exist;
    ///   `StoreError.invalidName` for an invalid name; `StoreError.io` or
    ///   `StoreError.storage` when closing or deleting fails.
    public func deleteDatabase(_ name: String) throws {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        let db = open.withLock { $0.removeValue(forKey: name) }
        if let db {
            try db.delete()
        } else {
            try Database.delete(name: name, directory: url)
        }
        databasesChanged()
    }

    /// Closes every open database.
    public func closeAll() {
        for watcher in watchers.withLock({ Array($0.values) }) { watcher.finish() }
        let all = open.withLock { o in
            defer { o = [:] }
            return Array(o.values)
        }
        for db in all { try? db.close() }
    }
}
