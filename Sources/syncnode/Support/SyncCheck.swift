import AsyncHTTPClient
import Foundation
import NIOCore
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// One look at whether a running node is in sync with each of its trusted peers (`syncnode
/// wait --in-sync`): the node names its peers, the keyspaces it syncs with each and how each
/// stands as it measured it (`GET /_node/peers`); each keyspace it says is in sync has its
/// digest here compared with the peer's, now.
final class SyncCheck {
    /// A trusted peer, and why it is not in sync (nil: it is).
    struct PeerState {
        let uuid: String
        let name: String
        let why: String?
    }

    private let directory: NodeDirectory
    private let running: RunningNode
    private let credential: (user: String, password: String)?
    private let identity: TLSIdentity
    /// The node's databases, opened once for every look.
    private var databases: [String: Database] = [:]
    /// The client that asks the running node, made at the first look and kept for the others.
    private var nodeClient: HTTPClient?

    init(directory: NodeDirectory, running: RunningNode, credential: (user: String, password: String)?, identity: TLSIdentity) {
        self.directory = directory
        self.running = running
        self.credential = credential
        self.identity = identity
    }

    func close() {
        for db in databases.values { try? db.close() }
        databases = [:]
        _ = nodeClient?.shutdown()
        nodeClient = nil
    }

    /// Every trusted peer the node knows, in sync or with the reason it is not.
    func peers() async throws -> [PeerState] {
        guard case .array(let listed) = try await nodePeers() else { return [] }
        var states: [PeerState] = []
        for peer in listed where peer["trusted"] == .bool(true) {
            let uuid = peer["uuid"]?.stringValue ?? "", name = peer["name"]?.stringValue ?? uuid
            guard case .dictionary(let syncs)? = peer["collections"], !syncs.isEmpty else {
                states.append(PeerState(uuid: uuid, name: name, why: "no keyspace is synced with it yet"))
                continue
            }
            var reasons: [String] = []
            for (keyspace, sync) in syncs.sorted(by: { $0.key < $1.key }) {
                if let reason = try await difference(keyspace, peer: peer, sync: sync) { reasons.append("\(keyspace): \(reason)") }
            }
            states.append(PeerState(uuid: uuid, name: name, why: reasons.isEmpty ? nil : reasons.joined(separator: "; ")))
        }
        return states
    }

    /// Why `keyspace` is not in sync between the node and `peer`; nil when the node measured it in
    /// sync (nothing pending either way) and their digests are equal now (the node measures every
    /// few seconds: a change made since shows in the digests).
    private func difference(_ keyspace: String, peer: DocumentValue, sync: DocumentValue) async throws -> String? {
        guard let name = Keyspace(keyspace) else { return "not a keyspace" }
        if let state = sync["state"]?.stringValue, state != "in_sync" {
            return [state.replacingOccurrences(of: "_", with: " "), sync["reason"]?.stringValue].compactMap { $0 }.joined(separator: ": ")
        }
        // A subscription pulls a part of the peer's documents: whole-collection digests differ by
        // design, and the node's measurement (nothing matching pending, the replicator idle) is it.
        if case .dictionary? = sync["subscription"] { return nil }
        let mine = try localCollection(name).digest()
        guard case .string(let host)? = peer["host"], case .int(let port)? = peer["port"] else { return "the node knows no address of it" }
        let fingerprint = peer["fingerprint"]?.stringValue
        var url = URLComponents()
        url.scheme = fingerprint == nil ? "http" : "https"
        url.host = host
        url.port = Int(port)
        url.path = "/" + keyspace
        if let fingerprint { url.queryItems = [URLQueryItem(name: "fp", value: fingerprint)] }
        guard let address = url.url else { return "its address \(host):\(port) is not usable" }
        let theirs: CollectionDigest
        let remote: RemoteDigest
        do {
            remote = try await RemoteDigest.connect(url: address, identity: identity, timeout: .seconds(10))
        } catch {
            return "its digest could not be read: \(error)"
        }
        do {
            theirs = try await remote.digest()
            await remote.shutdown()
        } catch {
            await remote.shutdown()
            return "its digest could not be read: \(error)"
        }
        guard theirs.root != mine.root else { return nil }
        var reason = "digests differ (\(mine.count) documents here, \(theirs.count) there)"
        if case .string(let activity)? = sync["activity"] { reason += "; replication \(activity)" }
        if case .string(let error)? = sync["last_error"] { reason += ", last error: \(error)" }
        return reason
    }

    private func localCollection(_ keyspace: Keyspace) throws -> DocumentCollection {
        let db = try databases[keyspace.database] ?? NodeOptions.open(database: keyspace.database, in: directory.url)
        databases[keyspace.database] = db
        // A missing collection ends `wait` (it closes the database; close() closes it again, harmlessly).
        return try NodeOptions.collection(keyspace, in: db)
    }

    /// `GET /_node/peers` of the running node, on loopback, pinned to its certificate.
    private func nodePeers() async throws -> DocumentValue {
        let host = running.host == "0.0.0.0" ? "127.0.0.1" : running.host == "::" ? "::1" : running.host
        let client: HTTPClient
        if let made = nodeClient {
            client = made
        } else {
            client = try await PeerClient.make(
                scheme: running.scheme, host: host, port: running.port, pinnedFingerprint: running.fingerprint, connectTimeout: .seconds(5)).0
            nodeClient = client
        }
        var request = HTTPClientRequest(url: "\(running.scheme)://\(host.contains(":") ? "[\(host)]" : host):\(running.port)/_node/peers")
        if let credential {
            request.headers.add(name: "Authorization", value: "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString())
        }
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .seconds(10))
            body = try await response.body.collect(upTo: 64 << 20)
        } catch {
            throw CLIError.network("the node on \(directory.url.path) (port \(running.port)) did not answer: \(error)")
        }
        guard response.status == .ok, let peers = try? DocumentValue(json: String(buffer: body)) else {
            throw CLIError.user("the node on \(directory.url.path) answered \(response.status.code) to GET /_node/peers: `wait` signs in with the node's own credential (.node/credential.json), which a node serving with --user or --users does not take")
        }
        return peers
    }
}
