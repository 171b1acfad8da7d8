import Crypto
import Foundation
import SyncNodeStore

/// An invitation to pair: whoever presents its token, with a client certificate, within its
/// time and uses, becomes a trusted peer with its scope. Only the token's SHA-256 is kept.
public struct Invitation: Sendable, Equatable {
    /// A short public name for it (what `invite --list` shows and `invite --revoke` takes).
    public let id: String
    /// What a peer that redeems it may reach.
    public var scope: PeerScope
    /// When it stops being honoured.
    public var expires: Date
    /// How many peers may redeem it; nil for any number.
    public var uses: Int?
    /// The fingerprints of the certificates that redeemed it, in order.
    public var redeemedBy: [String]
    /// What the operator wrote about it.
    public var note: String
    /// When it was made.
    public let created: Date
    /// Revoked by the operator: honoured no more, and its peers untrusted.
    public var revoked: Bool
    /// base64url SHA-256 of the token.
    let hash: String

    /// Whether it may still be redeemed by a new peer.
    public func isPending(at now: Date = Date()) -> Bool {
        !revoked && now < expires && uses.map { redeemedBy.count < $0 } ?? true
    }

    /// `{"id","scope","access","keyspaces","expires","uses","used","note","created","revoked","pending"}`,
    /// without the hash.
    public var json: DocumentValue {
        let iso = ISO8601DateFormatter()
        let fields: [String: DocumentValue] = [
            "id": .string(id), "expires": .string(iso.string(from: expires)), "uses": uses.map { .int(Int64($0)) } ?? .null,
            "used": .int(Int64(redeemedBy.count)), "note": .string(note), "created": .string(iso.string(from: created)),
            "revoked": .bool(revoked), "pending": .bool(isPending()),
        ]
        return .dictionary(fields.merging(scope.json) { a, _ in a })
    }

    /// `1 use`, `3 uses`, `any number of uses`.
    public var usesDescription: String {
        uses.map { "\($0) use\($0 == 1 ? "" : "s")" } ?? "any number of uses"
    }
}

/// Why an invitation was not honoured. Each leaves the store as it was.
public enum InvitationRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// No invitation has this token (it was never made, or is long gone).
    case unknown
    /// It expired at this time.
    case expired(Date)
    /// Its operator revoked it.
    case revoked
    /// Every use was taken.
    case usedUp
    /// This certificate redeemed it before, and was untrusted since: the invitation does not
    /// bring it back.
    case untrusted

    public var description: String {
        switch self {
        case .unknown: return "this invitation is not known here (a mistyped, forged or long-expired token): ask for a new one"
        case .expired(let at): return "this invitation expired at \(ISO8601DateFormatter().string(from: at)): ask for a new one"
        case .revoked: return "this invitation was revoked by the node's operator"
        case .usedUp: return "this invitation was used already: ask for a new one"
        case .untrusted: return "this certificate redeemed the invitation before and was untrusted since: the operator must trust it again"
        }
    }
}

/// The invitations a node made, in `.node/invitations.json` (mode 0600, locked against other
/// processes while changed, so `syncnode invite` and a running node share it). A running node
/// reads the file at each redemption: an invitation made or revoked by another process counts
/// at once.
public final class InvitationStore: Sendable {
    /// The file.
    public let file: URL

    /// The store of `directory` (the file need not exist yet).
    public init(directory: NodeDirectory) {
        file = directory.home.invitationsFile
    }

    /// Makes an invitation and returns it with its token (shown once, never stored).
    /// - Parameters:
    ///   - scope: what a peer that redeems it may reach.
    ///   - lifetime: how long it is honoured (at most a year).
    ///   - uses: how many peers may redeem it (nil: any number).
    ///   - note: kept beside it.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for a bad scope, a lifetime that is not positive or
    ///   over a year, uses below 1, or a file that cannot be read, locked or written.
    public func create(scope: PeerScope = .everything, lifetime: Duration = .seconds(15 * 60), uses: Int? = 1, note: String = "") throws -> (invitation: Invitation, token: String) {
        try scope.validate()
        guard lifetime > .zero, lifetime <= .seconds(366 * 86_400) else {
            throw SyncError.invalidConfiguration("an invitation lasts more than nothing and at most a year")
        }
        if let uses, uses < 1 { throw SyncError.invalidConfiguration("an invitation has at least one use") }
        let token = Self.random(bytes: 32)
        let now = Date()
        let invitation = Invitation(
            id: Self.randomHex(bytes: 4), scope: scope, expires: now.addingTimeInterval(Double(lifetime.components.seconds)), uses: uses,
            redeemedBy: [], note: note.filter { !$0.isNewline }, created: now, revoked: false, hash: Self.hash(token))
        try update { $0.append(invitation) }
        return (invitation, token)
    }

    /// Every invitation kept: pending ones, and used, expired or revoked ones for a day after.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be read.
    public func list() throws -> [Invitation] {
        try Self.read(file)
    }

    /// Revokes invitation `id` (or a unique prefix of it); nil when there is none.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the prefix names several, or the file cannot be
    ///   read, locked or written.
    public func revoke(id: String) throws -> Invitation? {
        try update { all in
            let matching = all.indices.filter { all[$0].id.hasPrefix(id) && !id.isEmpty }
            if matching.count > 1 { throw SyncError.invalidConfiguration("'\(id)' names \(matching.count) invitations: give more of the ID") }
            guard let index = matching.first else { return nil }
            all[index].revoked = true
            return all[index]
        }
    }

    /// Revokes invitation `id` (or a unique prefix) and untrusts in `trust` the peers that
    /// redeemed it: its invitation and the fingerprints untrusted; nil when there is none.
    /// - Throws: what ``revoke(id:)`` and ``TrustStore/remove(fingerprint:)`` throw.
    public func revoke(id: String, untrustingIn trust: TrustStore) throws -> (invitation: Invitation, untrusted: [String])? {
        guard let invitation = try revoke(id: id) else { return nil }
        return (invitation, try trust.fingerprints(admittedBy: invitation.id).filter { try trust.remove(fingerprint: $0) })
    }

    /// What a redemption did.
    public enum Redemption: Sendable, Equatable {
        /// A new peer was admitted: trust it with the invitation's scope.
        case admitted(Invitation)
        /// This certificate redeemed it before (the URL keeps working for the peer that used it).
        case again(Invitation)
    }

    /// Redeems `token` for the certificate `fingerprint`, atomically: of two peers redeeming a
    /// one-time invitation at once, exactly one is admitted. `stillTrusted` tells whether a
    /// certificate that redeemed it before is trusted now.
    /// - Throws: ``InvitationRefusal`` (nothing changed); ``SyncError/invalidConfiguration(_:)`` when the
    ///   file cannot be read, locked or written.
    public func redeem(token: String, fingerprint: String, stillTrusted: (String) -> Bool) throws -> Redemption {
        let hash = Self.hash(token)
        return try update { all in
            guard let index = all.firstIndex(where: { $0.hash == hash }) else { throw InvitationRefusal.unknown }
            let invitation = all[index]
            if invitation.revoked { throw InvitationRefusal.revoked }
            if invitation.redeemedBy.contains(fingerprint) {
                guard stillTrusted(fingerprint) else { throw InvitationRefusal.untrusted }
                return .again(invitation)
            }
            if Date() >= invitation.expires { throw InvitationRefusal.expired(invitation.expires) }
            guard invitation.isPending() else { throw InvitationRefusal.usedUp }
            all[index].redeemedBy.append(fingerprint)
            return .admitted(all[index])
        }
    }

    // MARK: - The file

    /// Runs `change` on the invitations under the file's lock and writes them back (without those
    /// that ended more than a day ago), unless it throws.
    private func update<T>(_ change: (inout [Invitation]) throws -> T) throws -> T {
        try FileLock.withLock(beside: file) {
            var all = try Self.read(file)
            let before = all
            let result = try change(&all)
            let cutoff = Date().addingTimeInterval(-86_400)
            all.removeAll { !$0.isPending() && $0.expires < cutoff }
            if all != before { try PrivateFile.write(DocumentValue.array(all.map(Self.stored)).toJSON() + "\n", to: file) }
            return result
        }
    }

    private static func stored(_ invitation: Invitation) -> DocumentValue {
        guard case .dictionary(var fields) = invitation.json else { return .null }
        for key in ["used", "pending"] { fields[key] = nil }
        fields["hash"] = .string(invitation.hash)
        fields["redeemed_by"] = .array(invitation.redeemedBy.map { .string($0) })
        return .dictionary(fields)
    }

    private static func read(_ file: URL) throws -> [Invitation] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        let broken = SyncError.invalidConfiguration("\(file.path) is not a list of invitations: fix or remove it (every invitation in it then ends)")
        guard case .array(let items)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)) else { throw broken }
        let iso = ISO8601DateFormatter()
        return try items.map { item in
            guard case .string(let id)? = item["id"], case .string(let hash)? = item["hash"],
                  case .string(let accessText)? = item["access"], let access = PeerScope.Access(rawValue: accessText),
                  case .string(let expiresText)? = item["expires"], let expires = iso.date(from: expiresText),
                  case .string(let createdText)? = item["created"], let created = iso.date(from: createdText) else { throw broken }
            var keyspaces: [Keyspace]?
            // Checked when it was made: an entry that is no keyspace (edited by hand) narrows the scope.
            if case .array(let names)? = item["keyspaces"] { keyspaces = names.compactMap { $0.stringValue.flatMap(Keyspace.init) } }
            var uses: Int?
            if case .int(let n)? = item["uses"] { uses = Int(n) }
            var redeemed: [String] = []
            if case .array(let fingerprints)? = item["redeemed_by"] { redeemed = fingerprints.compactMap(\.stringValue) }
            return Invitation(
                id: id, scope: PeerScope(keyspaces: keyspaces, access: access), expires: expires, uses: uses, redeemedBy: redeemed,
                note: item["note"]?.stringValue ?? "", created: created, revoked: item["revoked"] == .bool(true), hash: hash)
        }
    }

    static func hash(_ token: String) -> String {
        base64url(Data(SHA256.hash(data: Data(token.utf8))))
    }

    /// `count` random bytes as base64url without padding.
    static func random(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return base64url(Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    /// `count` random bytes in hex: an ID that reads well and never starts with "-".
    static func randomHex(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }

    private static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
