import ArgumentParser
import Dispatch
import Foundation
import Logging
import SyncNodeStore
import SyncNodeSync

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a node: serve its databases over the CouchDB replication protocol until SIGINT/SIGTERM.")

    @OptionGroup var node: NodeOptions
    @Option(name: .customLong("db"), help: "A database to serve (repeatable). Default: `default`, plus every database in the directory, and clients may create more.")
    var databases: [String] = []
    @Option(help: "The port; 0 picks a free one.") var port: Int = 0
    @Option(help: "The address to listen on.") var host: String = "0.0.0.0"
    @Option(help: "HTTP Basic user name (with --password).") var user: String?
    @Option(help: "HTTP Basic password (with --user).") var password: String?
    @Option(help: "A JSON file {\"user\": \"password\", ...} of accepted credentials.") var users: String?
    @Flag(help: "Serve plain HTTP instead of HTTPS.") var noTls = false
    @Option(help: "The node's name.") var name: String?
    @Option(name: .customLong("sync-with"), help: "Keep a continuous push/pull replication with this peer URL (repeatable).")
    var syncWith: [String] = []
    @Flag(name: .customLong("trust-on-first-use"),
          help: "For --sync-with URLs without an fp: accept a self-signed certificate on first contact, then pin it.")
    var trustOnFirstUse = false

    func validate() throws {
        guard (user == nil) == (password == nil) else { throw ValidationError("--user and --password go together") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        for text in syncWith { _ = try PeerURL.parse(text, option: "--sync-with") }
    }

    func run() async throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let served = databases.isEmpty ? ["default"] : databases
        for name in served { _ = try directory.database(name, create: true) }
        var credentials: [String: String] = [:]
        if let user, let password { credentials[user] = password }
        if let users {
            guard let data = FileManager.default.contents(atPath: users),
                  case .dictionary(let entries)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)) else {
                throw CLIError.user("cannot read users file \(users): expected a JSON object {\"user\": \"password\"}")
            }
            for (name, value) in entries {
                guard case .string(let secret) = value else { throw CLIError.user("users file: the password of '\(name)' must be a string") }
                credentials[name] = secret
            }
        }
        let listener = Listener(config: ListenerConfiguration(
            directory: directory, databases: databases.isEmpty ? nil : databases, port: port, host: host,
            disableTLS: noTls, authenticator: credentials.isEmpty ? nil : .users(credentials)))
        do {
            try await listener.start()
        } catch {
            throw CLIError(message: "\(error)", exitCode: 3)
        }
        guard let base = listener.urls.first, let fingerprint = listener.tlsIdentity?.fingerprint ?? (noTls ? "" : nil) else {
            throw CLIError(message: "the listener has no address", exitCode: 3)
        }
        let pairing = PairingURL(
            base: base, database: served[0], user: credentials.count == 1 ? user : nil, password: credentials.count == 1 ? password : nil,
            uuid: directory.uuid, fingerprint: noTls ? nil : fingerprint)
        let termination = Termination.listen()
        // Written straight to the file descriptor: scripts wait for this line.
        FileHandle.standardOutput.write(Data("syncnode: listening on \(pairing.url.absoluteString)\n".utf8))
        let replications = try syncWith.map { text in
            let url = try PeerURL.parse(text, option: "--sync-with")
            let collection = try directory.database(served[0])?.defaultCollection()
            guard let collection else { throw CLIError.user("no database \(served[0])") }
            var config = ReplicatorConfiguration(collection: collection, target: .url(url))
            config.continuous = true
            config.acceptOnlySelfSignedServerCertificate = trustOnFirstUse
            let replicator = Replicator(config: config)
            let peer = "\(url.host ?? "?"):\(url.port.map(String.init) ?? "")"
            let reporter = ProgressReporter(label: "sync \(peer)", inPlace: false)
            let failures = replicator.addChangeListener { change in
                if change.status.activity == .stopped, let error = change.status.error {
                    Output.error("replication with \(peer) stopped: \(error)")
                }
            }
            return (replicator, [reporter.attach(to: replicator), failures])
        }
        for (replicator, _) in replications {
            replicator.start()
        }
        await termination.wait()
        for (replicator, tokens) in replications {
            replicator.stop()
            await replicator.waitUntilStopped()
            tokens.forEach { $0.remove() }
        }
        await listener.stop()
        directory.closeAll()
    }
}
