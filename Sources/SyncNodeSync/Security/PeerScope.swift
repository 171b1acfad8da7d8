import Foundation
import SyncNodeStore

/// What a peer admitted by its certificate may reach: read or write access to some keyspaces,
/// or to all of them. A peer is never a server admin, whatever its scope: it cannot create or
/// delete databases, change `_security`, start `_replicate` jobs or administer the node.
///
/// Within its scope, a database's `_security` still applies: a scope widens nothing.
public struct PeerScope: Sendable, Equatable, CustomStringConvertible {
    /// Reading only, or reading and writing.
    public enum Access: String, Sendable, CaseIterable {
        case read, write
    }

    /// The keyspaces (a database alone covers every collection of it); nil for every keyspace
    /// the node serves.
    public var keyspaces: [Keyspace]?
    /// What the peer may do there.
    public var access: Access

    /// Write access to every keyspace: what a peer trusted without a scope gets.
    public static let everything = PeerScope(keyspaces: nil, access: .write)

    /// A scope of `access` to `keyspaces` (nil: all of them).
    public init(keyspaces: [Keyspace]? = nil, access: Access = .write) {
        self.keyspaces = keyspaces
        self.access = access
    }

    /// Whether the keyspace written `text` is in the scope.
    public func allows(keyspace text: String) -> Bool {
        guard let keyspace = Keyspace(text) else { return keyspaces == nil }
        return allows(keyspace)
    }

    /// Whether `keyspace` is in the scope.
    public func allows(_ keyspace: Keyspace) -> Bool {
        guard let keyspaces else { return true }
        return keyspace.isCovered(by: keyspaces)
    }

    /// Whether some keyspace of database `name` is in the scope (it may be listed to the peer).
    public func allows(database name: String) -> Bool {
        keyspaces?.contains { $0.database == name } ?? true
    }

    /// `{"access", "keyspaces"}` (keyspaces null for every one), as the CLI and the API show a scope.
    public var json: [String: DocumentValue] {
        ["access": .string(access.rawValue), "keyspaces": keyspaces.map { .array($0.map { .string($0.name) }) } ?? .null]
    }

    /// `write to every keyspace`, `read to a, b.s.c`.
    public var description: String {
        "\(access.rawValue) to " + (keyspaces.map { $0.map(\.name).joined(separator: ", ") } ?? "every keyspace")
    }

    /// Checks that each keyspace can be kept in the trusted-peers file.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` naming one that is empty or holds a space,
    ///   a control character, ',', '#', '=' or '!'.
    public func validate() throws {
        // Nothing that could split or end a field of the file.
        let forbidden = CharacterSet.whitespacesAndNewlines.union(.controlCharacters).union(CharacterSet(charactersIn: ",#=!"))
        for keyspace in keyspaces ?? [] where keyspace.database.isEmpty || keyspace.name.unicodeScalars.contains(where: forbidden.contains) {
            throw SyncError.invalidConfiguration("'\(keyspace.name)' is not a keyspace a scope can hold (db or db.scope.collection, without spaces, ',', '#', '=' or '!')")
        }
    }

    /// The keyspaces written `names`, as a scope's text forms (the CLI, the trusted-peers file,
    /// `POST /_node/invitations`) give them.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` naming the first that is neither `db` nor
    ///   `db.scope.collection`.
    public static func keyspaces(_ names: [String]) throws -> [Keyspace] {
        try names.map { name in
            guard let keyspace = Keyspace(name) else {
                throw SyncError.invalidConfiguration("'\(name)' is not a keyspace (db or db.scope.collection)")
            }
            return keyspace
        }
    }
}
