import Foundation
import Synchronization
import SyncNodeDiscovery

/// Which discovered peers `serve --auto-sync` replicates with: those whose
/// certificate fingerprint was given with `--trust` or is listed in the data
/// directory's `.node/trusted-peers` (one `FINGERPRINT [UUID]` per line, `#`
/// comments). With trust on first use, a peer never seen before is trusted
/// and recorded; a known UUID that comes back with another certificate is not.
/// A plain-HTTP peer has no certificate: only trust on first use (by UUID) admits it.
final class TrustedPeers: Sendable {
    private let file: URL
    private let firstUse: Bool
    private let entries: Mutex<(fingerprints: Set<String>, byUUID: [String: String])>

    init(directory: URL, trusted: [String], trustOnFirstUse: Bool) throws {
        file = directory.appendingPathComponent(".node/trusted-peers")
        firstUse = trustOnFirstUse
        var fingerprints = Set(trusted)
        var byUUID: [String: String] = [:]
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            for line in text.split(whereSeparator: \.isNewline) {
                let fields = line.prefix { $0 != "#" }.split(separator: " ").map(String.init)
                guard let fingerprint = fields.first else { continue }
                fingerprints.insert(fingerprint)
                if fields.count > 1 { byUUID[fields[1]] = fingerprint }
            }
        }
        entries = Mutex((fingerprints, byUUID))
    }

    /// Whether to replicate with `peer` (recording it under trust on first use).
    func admit(_ peer: Peer) -> Bool {
        let key = peer.record.fingerprint ?? "-"
        let (trusted, record): (Bool, Bool) = entries.withLock { e in
            if let fingerprint = peer.record.fingerprint, e.fingerprints.contains(fingerprint) { return (true, false) }
            if let known = e.byUUID[peer.uuid] { return (known == key, false) }
            guard firstUse else { return (false, false) }
            e.byUUID[peer.uuid] = key
            if peer.record.fingerprint != nil { e.fingerprints.insert(key) }
            return (true, true)
        }
        if record {
            let line = "\(key) \(peer.uuid) # \(peer.name), first seen \(ISO8601DateFormatter().string(from: Date()))\n"
            if let handle = try? FileHandle(forWritingTo: file) {
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            } else {
                try? Data(line.utf8).write(to: file)
            }
        }
        return trusted
    }

    /// Why a peer was not admitted, for the status line.
    func refusal(_ peer: Peer) -> String {
        let known = entries.withLock { $0.byUUID[peer.uuid] }
        if let known, known != (peer.record.fingerprint ?? "-") {
            return "its certificate \(peer.record.fingerprint ?? "(none: plain HTTP)") is not the \(known) trusted for uuid \(peer.uuid)"
        }
        return "its fingerprint \(peer.record.fingerprint ?? "(none: plain HTTP)") is not trusted (--trust FINGERPRINT, .node/trusted-peers, or --trust-on-first-use)"
    }
}
