import Foundation
import Synchronization

/// The peers a node trusts, by certificate fingerprint: those given at start
/// (`--trust`) and those in the data directory's `.node/trusted-peers` (one
/// `FINGERPRINT [UUID] [access=read|write] [keyspaces=K,K] [invitation=ID]` per line, `#`
/// comments; `!FINGERPRINT` marks one revoked). A line without `access` or `keyspaces` grants
/// write access to every keyspace (``PeerScope/everything``), as lines did before scopes.
///
/// Trust works both ways. A node replicates with the discovered peers it
/// trusts, and its listener admits a client that presents a trusted
/// certificate as that peer, without a password (Syncthing's device IDs).
///
/// With trust on first use, a peer discovered through DNS-SD (whose
/// certificate matched the fingerprint it announces) is trusted and recorded
/// the first time it is seen; a known UUID that comes back with another
/// certificate is not, and neither is a revoked fingerprint. The listener
/// itself never trusts a certificate on first use: an unknown client is told
/// how its operator can admit it. A plain-HTTP peer has no certificate
/// (written `-`): only trust on first use (by UUID) admits it.
///
/// The file is read again when it changes, so a peer removed from it
/// (`syncnode trust remove`) is refused from its next request on.
public final class TrustStore: Sendable {
    /// The file.
    public let file: URL
    private let given: Set<String>
    private let firstUse: Bool
    private let state: Mutex<State>
    private static let noCertificate = "-"

    private struct State: Sendable {
        var stamp: [Int] = []
        var fingerprints: Set<String> = []
        var revoked: Set<String> = []
        var byUUID: [String: String] = [:]
        var scopes: [String: PeerScope] = [:]
        /// Learned by trust on first use when the file could not be written: kept until the process ends.
        var remembered: [Entry] = []
    }

    /// One line of the file.
    public struct Entry: Sendable, Equatable {
        /// The certificate fingerprint, or `-` for a plain-HTTP peer.
        public let fingerprint: String
        /// The peer's UUID, when known.
        public var uuid: String?
        /// The comment after `#`.
        public let note: String
        /// A line `!FINGERPRINT`: removed, and never to be trusted on first use again.
        public var revoked = false
        /// What the peer may reach.
        public var scope = PeerScope.everything
        /// The invitation the peer redeemed to be trusted; nil when it was trusted otherwise.
        public var invitation: String?

        /// An entry; see each property.
        public init(fingerprint: String, uuid: String?, note: String, revoked: Bool = false, scope: PeerScope = .everything, invitation: String? = nil) {
            self.fingerprint = fingerprint
            self.uuid = uuid
            self.note = note
            self.revoked = revoked
            self.scope = scope
            self.invitation = invitation
        }
    }

    /// A peer signed in by its certificate.
    public struct TrustedPeer: Sendable, Equatable {
        /// `peer:<uuid>`, or `peer:` and the fingerprint's first 12 characters when no UUID is recorded.
        public let name: String
        /// What it may reach.
        public let scope: PeerScope
        /// Its node UUID, when recorded.
        public let uuid: String?
    }

    /// A trust store reading `.node/trusted-peers` of `directory` (a missing file trusts no one but `trusted`).
    /// - Parameters:
    ///   - directory: the node whose `.node/trusted-peers` to use.
    ///   - trusted: fingerprints trusted for this run only.
    ///   - trustOnFirstUse: trust (and record) discovered peers never seen before.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` naming the file and line when a line is not a
    ///   fingerprint, or when the file is not UTF-8 text.
    public init(directory: NodeDirectory, trusted: [String] = [], trustOnFirstUse: Bool = false) throws {
        file = directory.home.trustedPeersFile
        given = Set(trusted)
        firstUse = trustOnFirstUse
        state = Mutex(State())
        _ = try current()
    }

    /// The file's lines, in order (revoked ones included, `--trust` fingerprints not).
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file is not UTF-8 text or a line is not a
    ///   fingerprint.
    public func entries() throws -> [Entry] {
        try Self.parse(file)
    }

    /// Whether to replicate with a discovered peer (recording it under trust on first use).
    public func admit(fingerprint: String?, uuid: String, name: String) -> Bool {
        // What a peer announces is its to choose: only well-formed values are looked up or recorded.
        if let fingerprint, !TLSIdentity.isFingerprint(fingerprint) { return false }
        let key = fingerprint ?? Self.noCertificate
        guard let known = try? current() else { return false }
        if let fingerprint, known.fingerprints.contains(fingerprint) { return true }
        if known.revoked.contains(key) { return false }
        if let trusted = known.byUUID[uuid] { return trusted == key }
        guard firstUse, UUID(uuidString: uuid) != nil else { return false }
        record(Entry(fingerprint: key, uuid: uuid, note: "\(name), first seen \(Self.now())"))
        return true
    }

    /// Why a discovered peer was not admitted, for a status line.
    public func refusal(fingerprint: String?, uuid: String) -> String {
        let known = try? current()
        if let fingerprint, known?.revoked.contains(fingerprint) == true {
            return "its certificate \(fingerprint) was removed from the trusted peers (`\(Self.addCommand(fingerprint))` trusts it again)"
        }
        if let trusted = known?.byUUID[uuid], trusted != (fingerprint ?? Self.noCertificate) {
            return "its certificate \(fingerprint ?? "(none: plain HTTP)") is not the \(trusted) trusted for uuid \(uuid)"
        }
        return "its fingerprint \(fingerprint ?? "(none: plain HTTP)") is not trusted (--trust=FINGERPRINT, `syncnode trust add`, or --trust-on-first-use)"
    }

    /// The principal a client presenting this certificate signs in as: `peer:<uuid>`, or
    /// `peer:` and the fingerprint's first 12 characters when no UUID is recorded for it;
    /// nil when it is not trusted.
    public func principal(clientFingerprint fingerprint: String) -> String? {
        peer(clientFingerprint: fingerprint)?.name
    }

    /// The peer a client presenting this certificate signs in as, with its scope; nil when it is not trusted.
    public func peer(clientFingerprint fingerprint: String) -> TrustedPeer? {
        guard let known = try? current(), known.fingerprints.contains(fingerprint) else { return nil }
        return Self.peer(fingerprint, in: known)
    }

    /// Every peer trusted now (revoked ones not), by name.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be read.
    public func trustedPeers() throws -> [TrustedPeer] {
        let known = try current()
        return known.fingerprints.map { Self.peer($0, in: known) }.sorted { $0.name < $1.name }
    }

    private static func peer(_ fingerprint: String, in known: State) -> TrustedPeer {
        let uuid = known.byUUID.first { $0.value == fingerprint }?.key
        return TrustedPeer(name: "peer:" + (uuid ?? String(fingerprint.prefix(12))), scope: known.scopes[fingerprint] ?? .everything, uuid: uuid)
    }

    /// The fingerprint trusted for the peer `uuid`, if one is.
    public func fingerprint(uuid: String) -> String? {
        let known = try? current()
        return known?.byUUID[uuid] ?? known?.byUUID[uuid.lowercased()]
    }

    /// The fingerprints trusted because they redeemed invitation `id`.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be read.
    public func fingerprints(admittedBy id: String) throws -> [String] {
        try entries().filter { !$0.revoked && $0.invitation == id }.map(\.fingerprint)
    }

    /// Trusts `fingerprint` (with the peer's UUID, when known) from now on, with `scope`, revoked
    /// or not before. An earlier line of the same fingerprint is replaced; what this call does not
    /// give is kept from it (its UUID, and with a nil `scope` its scope and invitation), so pairing
    /// again never widens what a peer was admitted to.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` for a malformed fingerprint, UUID or scope, or when
    ///   the file cannot be locked or written.
    public func add(fingerprint: String, uuid: String? = nil, note: String = "", scope: PeerScope? = nil, invitation: String? = nil) throws {
        guard TLSIdentity.isFingerprint(fingerprint) else {
            throw SyncError.invalidConfiguration("'\(fingerprint)' is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
        }
        if let uuid, UUID(uuidString: uuid) == nil { throw SyncError.invalidConfiguration("'\(uuid)' is not a UUID") }
        try scope?.validate()
        try FileLock.withLock(beside: file) {
            let earlier = try Self.parse(file).last { $0.fingerprint == fingerprint && !$0.revoked }
            var lines = Self.lines(file).filter { ![fingerprint, "!" + fingerprint].contains(Self.firstField($0)) }
            lines.append(Self.line(Entry(
                fingerprint: fingerprint, uuid: uuid ?? earlier?.uuid, note: note.isEmpty ? "added \(Self.now())" : note,
                scope: scope ?? earlier?.scope ?? .everything, invitation: scope == nil ? invitation ?? earlier?.invitation : invitation)))
            try Self.replace(file, with: lines)
        }
    }

    /// Stops trusting `fingerprint`: its lines go, and a `!FINGERPRINT` line keeps trust on
    /// first use from taking it back. False when it was not trusted by the file. Fingerprints
    /// given with `--trust` stay trusted until the node restarts without them.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be locked or written.
    public func remove(fingerprint: String) throws -> Bool {
        try FileLock.withLock(beside: file) {
            var lines = Self.lines(file)
            let before = lines.count
            lines.removeAll { Self.firstField($0) == fingerprint }
            guard lines.count != before else { return false }
            lines.append(Self.line(Entry(fingerprint: fingerprint, uuid: nil, note: "removed \(Self.now())", revoked: true)))
            try Self.replace(file, with: lines)
            return true
        }
    }

    /// The command that trusts `fingerprint` (after `--` when it starts with "-", which would read as an option).
    public static func addCommand(_ fingerprint: String, directory: String? = nil) -> String {
        "syncnode" + (directory.map { " --dir \($0)" } ?? "") + " trust add " + (fingerprint.hasPrefix("-") ? "-- " : "") + fingerprint
    }

    // MARK: - The file

    private func current() throws -> State {
        let stamp = FileStamp.of(file)
        if let known = state.withLock({ $0.stamp == stamp ? $0 : nil }) { return known }
        let lines = try Self.parse(file)
        return state.withLock { s in
            var fresh = State(stamp: stamp, fingerprints: given, remembered: s.remembered)
            for entry in lines + s.remembered {
                if entry.revoked {
                    fresh.revoked.insert(entry.fingerprint)
                    continue
                }
                if entry.fingerprint != Self.noCertificate {
                    fresh.fingerprints.insert(entry.fingerprint)
                    fresh.scopes[entry.fingerprint] = entry.scope
                }
                if let uuid = entry.uuid { fresh.byUUID[uuid] = entry.fingerprint }
            }
            fresh.fingerprints.subtract(fresh.revoked.subtracting(given))
            // Given at start (--trust): trusted as before scopes, whatever a line says.
            for fingerprint in given { fresh.scopes[fingerprint] = .everything }
            s = fresh
            return fresh
        }
    }

    /// Records a peer trusted on first use; if the file cannot take it, it is trusted until the process ends.
    private func record(_ entry: Entry) {
        do {
            try FileLock.withLock(beside: file) { try Self.replace(file, with: Self.lines(file) + [Self.line(entry)]) }
        } catch {
            state.withLock { $0.remembered.append(entry) }
        }
        state.withLock { $0.stamp = [] }
    }

    private static func parse(_ file: URL) throws -> [Entry] {
        guard FileManager.default.fileExists(atPath: file.path) else { return [] }
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            throw SyncError.invalidConfiguration("cannot read \(file.path) as UTF-8 text")
        }
        var entries: [Entry] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.prefix { $0 != "#" }.split(whereSeparator: \.isWhitespace).map(String.init)
            guard var fingerprint = fields.first else { continue }
            let revoked = fingerprint.hasPrefix("!")
            if revoked { fingerprint.removeFirst() }
            guard fingerprint == noCertificate || TLSIdentity.isFingerprint(fingerprint) else {
                throw SyncError.invalidConfiguration("\(file.path):\(number + 1): '\(fingerprint)' is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
            }
            let note = line.firstIndex(of: "#").map { line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces) } ?? ""
            var entry = Entry(fingerprint: fingerprint, uuid: nil, note: note, revoked: revoked)
            for field in fields.dropFirst() {
                let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let place = "\(file.path):\(number + 1)"
                switch (parts[0], parts.count) {
                case ("access", 2):
                    guard let access = PeerScope.Access(rawValue: parts[1]) else {
                        throw SyncError.invalidConfiguration("\(place): access must be read or write, not '\(parts[1])'")
                    }
                    entry.scope.access = access
                case ("keyspaces", 2):
                    do {
                        entry.scope.keyspaces = try PeerScope.keyspaces(parts[1].split(separator: ",").map(String.init))
                    } catch SyncError.invalidConfiguration(let reason) {
                        throw SyncError.invalidConfiguration("\(place): \(reason)")
                    }
                case ("invitation", 2):
                    entry.invitation = parts[1]
                case (_, 1) where entry.uuid == nil:
                    entry.uuid = field
                default:
                    // Words a person added by hand (or a later version's fields) are left alone, as before scopes.
                    continue
                }
            }
            entries.append(entry)
        }
        return entries
    }

    private static func lines(_ file: URL) -> [String] {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    private static func firstField(_ line: String) -> String? {
        line.prefix { $0 != "#" }.split(whereSeparator: \.isWhitespace).first.map(String.init)
    }

    private static func line(_ entry: Entry) -> String {
        // The note may come from a peer (its name): no line breaks into the file.
        let note = entry.note.filter { !$0.isNewline }
        var fields = [(entry.revoked ? "!" : "") + entry.fingerprint, entry.uuid].compactMap { $0 }
        if !entry.revoked {
            if entry.scope.access != .write { fields.append("access=\(entry.scope.access.rawValue)") }
            if let keyspaces = entry.scope.keyspaces { fields.append("keyspaces=" + keyspaces.map(\.name).joined(separator: ",")) }
            if let invitation = entry.invitation { fields.append("invitation=\(invitation)") }
        }
        return fields.joined(separator: " ") + (note.isEmpty ? "" : " # \(note)")
    }

    private static func replace(_ file: URL, with lines: [String]) throws {
        try PrivateFile.write(lines.map { $0 + "\n" }.joined(), to: file)
    }

    private static func now() -> String { ISO8601DateFormatter().string(from: Date()) }
}
