import Foundation
import Synchronization

/// The peers a node trusts, by certificate fingerprint: those given at start
/// (`--trust`) and those in the data directory's `.node/trusted-peers` (one
/// `FINGERPRINT [UUID]` per line, `#` comments).
///
/// Trust works both ways. A node replicates with the discovered peers it
/// trusts, and its listener admits a client that presents a trusted
/// certificate as that peer, without a password (Syncthing's device IDs).
/// With trust on first use, a peer never seen before is trusted and recorded;
/// a known UUID that comes back with another certificate is not. A plain-HTTP
/// peer has no certificate (written `-`): only trust on first use (by UUID)
/// admits it.
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
        var byUUID: [String: String] = [:]
        /// Learned by trust on first use when the file could not be written: kept until the process ends.
        var remembered: [(fingerprint: String, uuid: String?)] = []
    }

    /// One line of the file.
    public struct Entry: Sendable, Equatable {
        /// The certificate fingerprint, or `-` for a plain-HTTP peer.
        public let fingerprint: String
        /// The peer's UUID, when known.
        public let uuid: String?
        /// The comment after `#`.
        public let note: String
    }

    /// - Parameters:
    ///   - directory: the node whose `.node/trusted-peers` to use.
    ///   - trusted: fingerprints trusted for this run only.
    ///   - trustOnFirstUse: trust (and record) peers never seen before.
    /// - throws: ``SyncError/invalidConfiguration(_:)`` naming the file and line when a line is not a fingerprint.
    public init(directory: NodeDirectory, trusted: [String] = [], trustOnFirstUse: Bool = false) throws {
        file = directory.url.appendingPathComponent(".node/trusted-peers")
        given = Set(trusted)
        firstUse = trustOnFirstUse
        state = Mutex(State())
        _ = try current()
    }

    /// The file's lines, in order.
    public func entries() throws -> [Entry] {
        try Self.parse(file)
    }

    /// Whether to replicate with a discovered peer (recording it under trust on first use).
    public func admit(fingerprint: String?, uuid: String, name: String) -> Bool {
        let key = fingerprint ?? Self.noCertificate
        guard let known = try? current() else { return false }
        if let fingerprint, known.fingerprints.contains(fingerprint) { return true }
        if let trusted = known.byUUID[uuid] { return trusted == key }
        guard firstUse else { return false }
        record(Entry(fingerprint: key, uuid: uuid, note: "\(name), first seen \(Self.now())"))
        return true
    }

    /// Why a discovered peer was not admitted, for a status line.
    public func refusal(fingerprint: String?, uuid: String) -> String {
        if let known = (try? current())?.byUUID[uuid], known != (fingerprint ?? Self.noCertificate) {
            return "its certificate \(fingerprint ?? "(none: plain HTTP)") is not the \(known) trusted for uuid \(uuid)"
        }
        return "its fingerprint \(fingerprint ?? "(none: plain HTTP)") is not trusted (--trust=FINGERPRINT, `syncnode trust add`, or --trust-on-first-use)"
    }

    /// The principal a client presenting this certificate signs in as, nil when it is not
    /// trusted. Under trust on first use an unknown certificate is trusted and recorded.
    public func principal(clientFingerprint fingerprint: String, address: String) -> String? {
        guard let known = try? current() else { return nil }
        if !known.fingerprints.contains(fingerprint) {
            guard firstUse else { return nil }
            record(Entry(fingerprint: fingerprint, uuid: nil, note: "client at \(address), first seen \(Self.now())"))
        }
        let uuid = known.byUUID.first { $0.value == fingerprint }?.key
        return "peer:" + (uuid ?? String(fingerprint.prefix(12)))
    }

    /// Trusts `fingerprint` (with the peer's UUID, when known) from now on.
    /// - throws: ``SyncError/invalidConfiguration(_:)`` for a malformed fingerprint or an unwritable file.
    public func add(fingerprint: String, uuid: String? = nil, note: String = "") throws {
        guard TLSIdentity.isFingerprint(fingerprint) else {
            throw SyncError.invalidConfiguration("'\(fingerprint)' is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
        }
        try Self.append(Entry(fingerprint: fingerprint, uuid: uuid, note: note.isEmpty ? "added \(Self.now())" : note), to: file)
    }

    /// Stops trusting `fingerprint` (every line naming it); false when no line did.
    /// Fingerprints given with `--trust` stay trusted until the node restarts without them.
    public func remove(fingerprint: String) throws -> Bool {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let before = lines.count
        lines.removeAll { $0.prefix { $0 != "#" }.split(whereSeparator: \.isWhitespace).first.map(String.init) == fingerprint }
        guard lines.count != before else { return false }
        try Self.replace(file, with: lines.joined(separator: "\n"))
        return true
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
            for entry in lines + s.remembered.map({ Entry(fingerprint: $0.fingerprint, uuid: $0.uuid, note: "") }) {
                if entry.fingerprint != Self.noCertificate { fresh.fingerprints.insert(entry.fingerprint) }
                if let uuid = entry.uuid { fresh.byUUID[uuid] = entry.fingerprint }
            }
            s = fresh
            return fresh
        }
    }

    /// Records a peer trusted on first use; if the file cannot take it, it is trusted until the process ends.
    private func record(_ entry: Entry) {
        do {
            try Self.append(entry, to: file)
        } catch {
            state.withLock { $0.remembered.append((entry.fingerprint, entry.uuid)) }
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
            guard let fingerprint = fields.first else { continue }
            guard fingerprint == noCertificate || TLSIdentity.isFingerprint(fingerprint) else {
                throw SyncError.invalidConfiguration("\(file.path):\(number + 1): '\(fingerprint)' is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
            }
            let note = line.firstIndex(of: "#").map { line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces) } ?? ""
            entries.append(Entry(fingerprint: fingerprint, uuid: fields.count > 1 ? fields[1] : nil, note: note))
        }
        return entries
    }

    private static func append(_ entry: Entry, to file: URL) throws {
        // The note may come from a peer (its name): no line breaks into the file.
        let note = entry.note.filter { !$0.isNewline }
        let line = [entry.fingerprint, entry.uuid].compactMap { $0 }.joined(separator: " ") + (note.isEmpty ? "" : " # \(note)") + "\n"
        let existing = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        try replace(file, with: existing + (existing.isEmpty || existing.hasSuffix("\n") ? "" : "\n") + line)
    }

    private static func replace(_ file: URL, with text: String) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".trusted-peers-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary.path, file.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw SyncError.invalidConfiguration("cannot write \(file.path)")
        }
    }

    private static func now() -> String { ISO8601DateFormatter().string(from: Date()) }
}
