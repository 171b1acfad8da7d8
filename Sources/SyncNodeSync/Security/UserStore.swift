import _CryptoExtras
import Crypto
import Foundation
import Synchronization
import SyncNodeStore

/// The people who may use a node, kept in one file (`.node/users.json`, mode
/// 0600) with salted, slow password hashes: PBKDF2-HMAC-SHA512 with a random
/// 16-byte salt per user, in the field names of CouchDB's `_users` documents
/// (`password_scheme`, `pbkdf2_prf`, `iterations`, `salt`, `derived_key`).
///
/// A password is derived once per process: after a right one, the listener
/// compares a keyed hash of it instead, so Basic auth on every request stays
/// cheap while a stolen file stays slow to attack.
public final class UserStore: Sendable {
    /// The file.
    public let file: URL
    /// Rounds of PBKDF2: OWASP's figure for SHA-512 (and swift-crypto's minimum).
    static let iterations = 210_000

    private struct Entry: Equatable, Sendable {
        let salt: [UInt8]
        let derivedKey: [UInt8]
        let iterations: Int
        let roles: [String]
    }

    /// The file as last read, with what `stat` said of it then.
    private struct Loaded: Sendable {
        var stamp: [Int] = []
        var users: [String: Entry] = [:]
    }

    private let loaded = Mutex(Loaded())
    /// Passwords already derived in this process: user -> the stored hash they matched and
    /// HMAC(processKey, password). A new password for the user is a new hash: the old one stops.
    private let verified = Mutex<[String: (derivedKey: [UInt8], keyed: [UInt8])]>([:])
    private let processKey = SymmetricKey(size: .bits256)

    /// The store in `file` (which need not exist yet).
    public init(file: URL) {
        self.file = file
    }

    /// The users file of a node directory.
    public convenience init(directory: NodeDirectory) {
        self.init(file: directory.home.usersFile)
    }

    /// A new random password: 18 random bytes as 24 base64url characters (nothing to escape
    /// in a URL's user info, so it can ride in a pairing URL).
    public static func randomPassword() -> String {
        var generator = SystemRandomNumberGenerator()
        let random = Data((0..<18).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        return random.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    /// The user names, sorted; empty when the file does not exist.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file is not a users file or holds an entry
    ///   that is not a PBKDF2-SHA512 hash.
    public func names() throws -> [String] {
        try current().keys.sorted()
    }

    /// A user's roles, matched against databases' `_security` (`_admin`: a server admin); nil for no such user.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file is not a valid users file.
    public func roles(of name: String) throws -> [String]? {
        try current()[name]?.roles
    }

    /// Adds `name`, or sets a new password and roles for it. A user with role `_admin` is a
    /// server admin (every database, creating and deleting them); others get what each
    /// database's `_security` grants their name and roles.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for an empty password, a name that is empty, over
    ///   256 bytes or holds a colon (HTTP Basic cannot carry it), an existing file that is not a valid
    ///   users file, or a file that cannot be locked or written.
    public func add(_ name: String, password: String, roles: [String] = []) throws {
        guard !name.isEmpty, !name.contains(":"), name.utf8.count <= 256 else {
            throw SyncError.invalidConfiguration("a user name must be 1 to 256 bytes without ':' (got '\(name)')")
        }
        guard !password.isEmpty else { throw SyncError.invalidConfiguration("the password of '\(name)' is empty") }
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = UInt8.random(in: .min ... .max, using: &generator) }
        let entry = Entry(salt: salt, derivedKey: try Self.derive(password, salt: salt, iterations: Self.iterations),
                          iterations: Self.iterations, roles: roles)
        try FileLock.withLock(beside: file) {
            var users = try current()
            users[name] = entry
            try write(users)
        }
    }

    /// Removes `name`; false when there was no such user.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file is not a valid users file or cannot be
    ///   locked or written.
    @discardableResult
    public func remove(_ name: String) throws -> Bool {
        try FileLock.withLock(beside: file) {
            var users = try current()
            guard users.removeValue(forKey: name) != nil else { return false }
            try write(users)
            return true
        }
    }

    /// Whether `password` is `name`'s. The file is re-read when it changes, so users
    /// added or removed with `syncnode user` apply to a running node.
    public func check(_ name: String, _ password: String) -> Bool {
        guard let users = try? current(), !users.isEmpty else { return false }
        let keyed = Array(HMAC<SHA256>.authenticationCode(for: Data(password.utf8), using: processKey))
        guard let entry = users[name] else {
            // The same work as for a known user, so timing does not tell which names exist.
            _ = try? Self.derive(password, salt: [UInt8](repeating: 0, count: 16), iterations: Self.iterations)
            return false
        }
        if let known = verified.withLock({ $0[name] }), known.derivedKey == entry.derivedKey,
           ListenerAuthenticator.constantTimeEquals(known.keyed, keyed) {
            return true
        }
        guard let derived = try? Self.derive(password, salt: entry.salt, iterations: entry.iterations),
              ListenerAuthenticator.constantTimeEquals(derived, entry.derivedKey) else { return false }
        verified.withLock { $0[name] = (entry.derivedKey, keyed) }
        return true
    }

    /// Bytes that change with `name`'s password (session cookies are signed with them); nil for no such user.
    public func sessionKey(_ name: String) -> [UInt8]? {
        (try? current())?[name].map { Array(SHA256.hash(data: $0.derivedKey)) }
    }

    /// An authenticator for a listener.
    public func authenticator() -> ListenerAuthenticator {
        ListenerAuthenticator({ [self] in check($0, $1) }, sessionKey: { [self] in sessionKey($0) },
                              roles: { [self] in (try? roles(of: $0)) ?? [] })
    }

    private static func derive(_ password: String, salt: [UInt8], iterations: Int) throws -> [UInt8] {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: salt, using: .sha512, outputByteCount: 32, unsafeUncheckedRounds: iterations)
        return key.withUnsafeBytes { Array($0) }
    }

    // MARK: - The file

    private func current() throws -> [String: Entry] {
        let stamp = FileStamp.of(file)
        if let users = loaded.withLock({ $0.stamp == stamp ? $0.users : nil }) { return users }
        let users = try read()
        loaded.withLock { $0 = Loaded(stamp: stamp, users: users) }
        verified.withLock { v in v = v.filter { users[$0.key]?.derivedKey == $0.value.derivedKey } }
        return users
    }

    private func read() throws -> [String: Entry] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [:] }
        guard case .dictionary(let root)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)),
              case .dictionary(let users)? = root["users"] else {
            throw SyncError.invalidConfiguration("\(file.path) is not a users file ({\"users\": {...}}); remove it to start over")
        }
        var entries: [String: Entry] = [:]
        for (name, value) in users {
            guard case .dictionary(let fields) = value, fields["password_scheme"] == "pbkdf2", fields["pbkdf2_prf"] == "sha512",
                  case .string(let salt)? = fields["salt"], let saltBytes = Self.bytes(hex: salt),
                  case .string(let key)? = fields["derived_key"], let keyBytes = Self.bytes(hex: key),
                  case .int(let iterations)? = fields["iterations"], (1...10_000_000).contains(iterations),
                  let roles = Self.strings(fields["roles"]) else {
                throw SyncError.invalidConfiguration("\(file.path): the entry of '\(name)' is not a PBKDF2-SHA512 hash; set its password again with `syncnode user add`")
            }
            entries[name] = Entry(salt: saltBytes, derivedKey: keyBytes, iterations: Int(iterations), roles: roles)
        }
        return entries
    }

    private func write(_ users: [String: Entry]) throws {
        var object: [String: DocumentValue] = [:]
        for (name, entry) in users {
            object[name] = [
                "password_scheme": "pbkdf2", "pbkdf2_prf": "sha512", "iterations": .int(Int64(entry.iterations)),
                "salt": .string(Self.hex(entry.salt)), "derived_key": .string(Self.hex(entry.derivedKey)),
                "roles": .array(entry.roles.map { .string($0) }),
            ]
        }
        let text = DocumentValue.dictionary(["users": .dictionary(object)]).toJSON() + "\n"
        // A reader sees the old file or the new, never half of one.
        try PrivateFile.write(text, to: file)
        loaded.withLock { $0 = Loaded() }
    }

    /// An array of strings (absent: none); nil for anything else.
    private static func strings(_ value: DocumentValue?) -> [String]? {
        guard let value else { return [] }
        guard case .array(let items) = value else { return nil }
        let strings = items.compactMap { $0.stringValue }
        return strings.count == items.count ? strings : nil
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes) }

    /// The bytes of a stored hex field; nil for an empty or malformed one.
    static func bytes(hex: String) -> [UInt8]? { Hex.bytes(hex).flatMap { $0.isEmpty ? nil : $0 } }
}
