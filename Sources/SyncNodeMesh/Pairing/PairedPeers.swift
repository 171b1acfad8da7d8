import Foundation
import SyncNodeStore
import SyncNodeSync

/// The peers a node paired with by URL, kept in `.node/paired-peers.json` (mode 0600: the URLs
/// carry the peers' credentials), so that a restarted node syncs with them again even where
/// DNS-SD cannot see them. One URL per peer UUID, the latest pairing's.
struct PairedPeers: Sendable {
    let file: URL

    init(directory: NodeDirectory) {
        file = directory.url.appendingPathComponent(".node/paired-peers.json")
    }

    /// The saved pairing URLs; a file that cannot be read counts as none (the peers are still
    /// trusted, and pairing again restores it).
    func load() -> [PairingURL] {
        guard let data = FileManager.default.contents(atPath: file.path),
              case .array(let entries)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)) else { return [] }
        return entries.compactMap { $0.stringValue.flatMap { try? PairingURL(string: $0) } }
    }

    /// Saves `url`, replacing an earlier one of the same peer.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when the file cannot be written.
    func save(_ url: PairingURL) throws {
        let kept = load().filter { $0.uuid != url.uuid } + [url]
        let text = DocumentValue.array(kept.map { .string($0.url.absoluteString) }).toJSON() + "\n"
        let temporary = file.appendingPathExtension("tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
              rename(temporary.path, file.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw SyncError.invalidConfiguration("cannot write the paired peers \(file.path)")
        }
    }
}
