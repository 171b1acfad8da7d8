import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeSync

/// Which discovered peers `serve --auto-sync` replicates with: those whose
/// certificate fingerprint was given with `--trust` or is listed in the data
/// directory's `.node/trusted-peers` (one `FINGERPRINT [UUID]` per line, `#`
/// comments). With trust on first use, a peer never seen before is trusted
/// and recorded; a known UUID that comes back with another certificate is not.
/// A plain-HTTP peer has no certificate (written `-`): only trust on first use (by UUID) admits it.
final class TrustedPeers: Sendable {
    private let file: URL
    private let firstUse: Bool
    private let entries: Mutex<(fingerprints: Set<String>, byUUID: [String: String])>
    private static let noCertificate = "-"

    /// - throws: ``CLIError`` naming the file and line when the file cannot be read or a line is not a fingerprint.
    init(directory: URL, trusted: [String], trustOnFirstUse: Bool) throws {
        file = directory.appendingPathComponent(".node/trusted-peers")
        firstUse = trustOnFirstUse
        var fingerprints = Set(trusted)
        var byUUID: [String: String] = [:]
        if FileManager.default.fileExists(atPath: file.path) {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else {
                throw CLIError.user("cannot read \(file.path) as UTF-8 text")
            }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let fields = line.prefix { $0 != "#" }.split(whereSeparator: \.isWhitespace).map(String.init)
                guard let fingerprint = fields.first else { continue }
                guard fingerprint == Self.noCertificate || TLSIdentity.isFingerprint(fingerprint) else {
                    throw CLIError.user("\(file.path):\(number + 1): '\(fingerprint)' is not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints)")
                }
                if fingerprint != Self.noCertificate { fingerprints.insert(fingerprint) }
                if fields.count > 1 { byUUID[fields[1]] = fingerprint }
            }
        }
        entries = Mutex((fingerprints, byUUID))
    }

    /// Whether to replicate with `peer` (recording it under trust on first use).
    func admit(_ peer: Peer) -> Bool {
        let key = peer.record.fingerprint ?? Self.noCertificate
        let (trusted, record): (Bool, Bool) = entries.withLock { e in
            if let fingerprint = peer.record.fingerprint, e.fingerprints.contains(fingerprint) { return (true, false) }
            if let known = e.byUUID[peer.uuid] { return (known == key, false) }
            guard firstUse else { return (false, false) }
            e.byUUID[peer.uuid] = key
            if peer.record.fingerprint != nil { e.fingerprints.insert(key) }
            return (true, true)
        }
        if record { remember(peer, key) }
        return trusted
    }

    /// Appends the peer to the file; a failure costs only the memory of it (one warning line).
    private func remember(_ peer: Peer, _ key: String) {
        // The name is the peer's to choose: no line breaks into the file.
        let name = peer.name.filter { !$0.isNewline }
        let line = "\(key) \(peer.uuid) # \(name), first seen \(ISO8601DateFormatter().string(from: Date()))\n"
        do {
            if !FileManager.default.fileExists(atPath: file.path) { try Data().write(to: file) }
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(line.utf8))
        } catch {
            Output.error("cannot record \(peer.name) in \(file.path) (\(error.localizedDescription)); it is trusted until this node stops")
        }
    }

    /// Why a peer was not admitted, for the status line.
    func refusal(_ peer: Peer) -> String {
        let known = entries.withLock { $0.byUUID[peer.uuid] }
        if let known, known != (peer.record.fingerprint ?? Self.noCertificate) {
            return "its certificate \(peer.record.fingerprint ?? "(none: plain HTTP)") is not the \(known) trusted for uuid \(peer.uuid)"
        }
        return "its fingerprint \(peer.record.fingerprint ?? "(none: plain HTTP)") is not trusted (--trust=FINGERPRINT, .node/trusted-peers, or --trust-on-first-use)"
    }
}
