import Foundation
import SyncNodeStore
import SyncNodeSync

/// The peers a node paired with by URL, kept in `.node/paired-peers.json` (mode 0600: the URLs
/// carry the peers' credentials), so that a restarted node syncs with them again even where
/// DNS-SD cannot see them. One URL per peer UUID, the latest pairing's.
struct PairedPeers: Sendable {
    let file: URL

    init(directory: NodeDirectory) {
        file = directory.home.pairedPeersFile
    }

    /// The saved pairing URLs; a file that cannot be read counts as none (the peers are still
    /// trusted, and pairing again restores them).
    func load() -> [PairingURL] {
        (try? saved()) ?? []
    }

    /// Saves `url`, replacing an earlier one of the same peer. Locked against another process
    /// pairing at the same moment; a file that does not parse is left alone, not overwritten
    /// with this pairing alone.
    /// - Throws: `SyncError/invalidConfiguration(_:)` when the file cannot be read, locked or written.
    func save(_ url: PairingURL) throws {
        try FileLock.withLock(beside: file) {
            let kept = try saved().filter { $0.uuid != url.uuid } + [url]
            try PrivateFile.write(DocumentValue.array(kept.map { .string($0.url.absoluteString) }).toJSON() + "\n", to: file)
        }
    }

    /// The file's URLs (none when there is no file).
    private func saved() throws -> [PairingURL] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        guard case .array(let entries)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)) else {
            throw SyncError.invalidConfiguration("\(file.path) is not a JSON array of pairing URLs: fix or remove it")
        }
        return entries.compactMap { $0.stringValue.flatMap { try? PairingURL(string: $0) } }
    }
}

extension NodeDirectory {
    /// The peers this node paired with by URL (`.node/paired-peers.json`).
    var pairedPeers: PairedPeers { PairedPeers(directory: self) }
}
