import Foundation
import SyncNodeStore
import SyncNodeSync

/// Where a running node of a data directory listens, kept in `.node/running.json` (mode 0600)
/// while it runs, so that commands on the same directory (`syncnode invite`) can make URLs
/// that reach it.
public struct RunningNode: Sendable, Equatable {
    /// The process serving.
    public let pid: Int32
    /// Its listener's port.
    public let port: Int
    /// `https` or `http`.
    public let scheme: String
    /// The address it is bound to (`0.0.0.0` for every IPv4 interface).
    public let host: String
    /// Its certificate's fingerprint; nil over plain HTTP.
    public let fingerprint: String?
    /// The keyspace its pairing URLs name by default.
    public let database: String

    /// The node running on `directory`; nil when none is (no file, or its process is gone).
    public static func read(directory: NodeDirectory) -> RunningNode? {
        guard let data = FileManager.default.contents(atPath: file(directory).path),
              case .dictionary(let fields)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)),
              case .int(let pid)? = fields["pid"], case .int(let port)? = fields["port"],
              case .string(let scheme)? = fields["scheme"], case .string(let host)? = fields["host"],
              case .string(let database)? = fields["database"] else { return nil }
        // A node killed without stopping left its file behind.
        guard kill(Int32(pid), 0) == 0 || errno == EPERM else { return nil }
        return RunningNode(pid: Int32(pid), port: Int(port), scheme: scheme, host: host, fingerprint: fields["fingerprint"]?.stringValue, database: database)
    }

    /// A pairing URL of this node: its first reachable address as host, the others in `addr=`,
    /// with `invitation` when given. `keyspace` is the path (default: ``database``).
    public func pairingURL(uuid: String, invitation: String? = nil, keyspace: Keyspace? = nil) -> PairingURL {
        let hosts = LocalAddresses.reachable(boundTo: host)
        let first = hosts.first ?? "127.0.0.1"
        let base = URL(string: "\(scheme)://\(first.contains(":") ? "[\(first)]" : first):\(port)/") ?? URL(fileURLWithPath: "/")
        return PairingURL(base: base, database: keyspace?.name ?? database, uuid: uuid, fingerprint: fingerprint, invitation: invitation,
                          addresses: Array(hosts.dropFirst()))
    }

    func write(directory: NodeDirectory) throws {
        let fields: [String: DocumentValue] = [
            "pid": .int(Int64(pid)), "port": .int(Int64(port)), "scheme": .string(scheme), "host": .string(host),
            "fingerprint": fingerprint.map { .string($0) } ?? .null, "database": .string(database),
        ]
        try PrivateFile.write(DocumentValue.dictionary(fields).toJSON() + "\n", to: Self.file(directory))
    }

    /// Removes the file when it is this process's.
    static func remove(directory: NodeDirectory) {
        guard let running = read(directory: directory), running.pid == getpid() else { return }
        try? FileManager.default.removeItem(at: file(directory))
    }

    static func file(_ directory: NodeDirectory) -> URL {
        directory.home.runningFile
    }
}
