import ArgumentParser
import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import SyncNodeDiscovery
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a node: serve its databases over the CouchDB replication protocol, advertise it and find peers (DNS-SD), until SIGINT/SIGTERM.",
        discussion: "Example:\n  syncnode --dir ~/notes serve --auto-sync --trust=<the other node's fingerprint>")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Option(name: .customLong("db"), help: "A database to serve (repeatable). Default: `default`, plus every database in the directory, and clients may create more.")
    var databases: [String] = []
    @Option(help: "The port; 0 picks a free one.") var port: Int = 0
    @Option(help: "The address to listen on (default: 0.0.0.0, every IPv4 interface; 127.0.0.1 with --anonymous).")
    var host: String?
    @Option(help: "HTTP Basic user name; its password comes from $SYNCNODE_PASSWORD (or --password). Also used with auto-synced peers. Without --user, --users or users made with `syncnode user add`, the node makes an admin credential of its own (DIR/.node/credential.json; `syncnode credential` prints it).")
    var user: String?
    @Option(help: "The password of --user. Every user of this machine can read it in `ps`: prefer $SYNCNODE_PASSWORD.")
    var password: String?
    @Option(help: "A JSON file {\"user\": \"password\", ...} of accepted credentials, in plain text (deprecated: `syncnode user add` keeps hashes instead).")
    var users: String?
    @Flag(help: "Serve without authentication: whoever can connect may read and write every database. Listens on 127.0.0.1 unless --host is given.")
    var anonymous = false
    @Flag(help: "Serve plain HTTP instead of HTTPS.") var noTls = false
    @Option(help: "A PEM certificate (its chain may follow) to serve instead of the node's own self-signed one; needs --tls-key. Peers then pin this certificate's fingerprint.")
    var tlsCert: String?
    @Option(help: "The unencrypted PEM private key (EC or RSA) of --tls-cert. Keep it readable by you alone (chmod 600).")
    var tlsKey: String?
    @Flag(help: "Refuse every write through the API with 403: clients and peers may read and pull, not write. The node's own replications (--auto-sync, --sync-with) still bring changes in.")
    var readOnly = false
    @Option(help: "The node's DNS-SD name (default: the host name).") var name: String?
    @Flag(help: "Do not advertise the node through DNS-SD.") var noAdvertise = false
    @Flag(help: "Do not look for peers through DNS-SD.") var noBrowse = false
    @Flag(help: "Replicate with peers without gzip: bodies cross as they are (faster only where the link is faster than compressing).")
    var noCompression = false
    @Option(name: .customLong("sync-with"), help: "Keep a continuous push/pull replication with this peer URL (repeatable).")
    var syncWith: [String] = []
    @Option(name: .customLong("pair"), help: "Pair with the node of this pairing URL (repeatable), as with one DNS-SD cannot see: its invitation is redeemed, its fingerprint trusted, the URL kept for restarts (DIR/.node/paired-peers.json), and every keyspace both share synced with it.")
    var pairWith: [String] = []
    @Flag(name: .customLong("auto-sync"), help: "Keep every keyspace both nodes share pulled from every discovered peer that is trusted.")
    var autoSync = false
    @Option(name: .customLong("subscribe"), help: ArgumentHelp(
        "Pull only what a Mango selector matches in a keyspace, from every peer and the hub (repeatable), e.g. 'orders={\"store\":\"s1\"}'. Documents that stop matching stay and stop updating; --sync-with URLs are not filtered.",
        valueName: "keyspace=json"))
    var subscribe: [String] = []
    @Option(name: .customLong("trust"), help: "Trust a peer's certificate fingerprint (repeatable; see also `syncnode trust`): --auto-sync syncs with it, and it signs in with that certificate, without a password.")
    var trusted: [String] = []
    @Flag(name: .customLong("trust-on-first-use"),
          help: "Trust a peer's self-signed certificate the first time it is seen, then only that one: --sync-with URLs without fp, and discovered peers (recorded in DIR/.node/trusted-peers, so they also sign in by certificate). A certificate that merely connects is never trusted so.")
    var trustOnFirstUse = false
    @Option(help: "For --sync-with and --auto-sync: resolve (each conflict's winner is kept and the other leaves tombstoned, alike on every node) or keep (conflicts stay, as CouchDB keeps them).")
    var conflicts: ConflictPolicy = .resolve
    @Option(name: .customLong("cors-origin"), help: "Let web pages from this origin (e.g. https://app.example:8443, or *) use the API with credentials (repeatable): PouchDB in a browser.")
    var corsOrigins: [String] = []
    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may stay silent (TLS handshake, headers, a body that stops, idle keep-alive) before it is closed; feeds with heartbeats stay open.")
    var idleTimeout: Int = 60
    @Option(name: .customLong("max-attachment-mb"), help: "The largest attachment, in MiB, taken by an upload or from a peer (413 or 502 beyond).")
    var maxAttachmentMB: Int = 16 << 10
    @Option(name: .customLong("hub"), help: ArgumentHelp(
        "Also sync every shared keyspace, both ways and continuously, with a CouchDB cluster beyond the LAN: one member's URL, http(s)://ADMIN:PASSWORD@HOST:PORT (repeatable: each member, tried in turn when the one in use fails). Keyspace db goes to database db, db.scope.collection to db$scope$collection.",
        valueName: "url"))
    var hubs: [String] = []
    @Option(name: .customLong("hub-credentials"), help: ArgumentHelp(
        "A file whose first line is USER:PASSWORD, the CouchDB admin for --hub URLs that carry none (keep it chmod 600; for a service, out of the unit file and ps).",
        valueName: "file"))
    var hubCredentials: String?
    @Option(name: .customLong("tombstone-ttl"), help: ArgumentHelp(
        "Reap (purge) a deleted document's tombstone once it is older than this (90s, 15m, 2h, 30d) and every trusted peer whose scope covers its keyspace has checkpointed past it (and, with --hub, once it was pushed to the hub); a peer away longer holds reaping back until it returns or is untrusted. Peers known only by URL are not waited for. Default: keep tombstones forever.",
        valueName: "duration"))
    var tombstoneTTL: DurationArgument?
    @Option(help: "How to draw the pairing QR code on stdout: light-on-dark (dark terminals), dark-on-light, or none. Never drawn when stdout is not a terminal.")
    var qr: QRStyle = .lightOnDark

    enum QRStyle: String, ExpressibleByArgument, CaseIterable {
        case lightOnDark = "light-on-dark", darkOnLight = "dark-on-light", none

        /// `text` as QR art and a line break for stdout; empty for `none`, or (unless asked for
        /// by name) when stdout is not a terminal: a log or a service's journal, where the URL
        /// line is what is read.
        func art(_ text: String, onlyOnTerminal: Bool = true) -> String {
            guard self != .none, !onlyOnTerminal || isatty(STDOUT_FILENO) != 0, let code = try? QRCode(text) else { return "" }
            return code.text(style: self == .darkOnLight ? .darkOnLight : .lightOnDark) + "\n"
        }
    }

    func validate() throws {
        if anonymous && (user != nil || users != nil) { throw ValidationError("--anonymous serves without authentication: drop --user and --users, or drop --anonymous") }
        if password != nil && user == nil { throw ValidationError("--password needs --user") }
        if user != nil && password == nil && Self.environmentPassword == nil {
            throw ValidationError("--user needs a password: set SYNCNODE_PASSWORD (or pass --password)")
        }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if noTls && tlsCert != nil { throw ValidationError("--no-tls serves plain HTTP: drop --tls-cert and --tls-key, or drop --no-tls") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard (1...86_400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1...86400 seconds") }
        guard (1...(1 << 30)).contains(maxAttachmentMB) else { throw ValidationError("--max-attachment-mb must be 1 or more (MiB)") }
        for text in syncWith { _ = try PeerURL.parse(text, option: "--sync-with") }
        _ = try subscriptions()
        for text in pairWith {
            guard let url = try? PairingURL(string: text), url.fingerprint != nil else {
                throw ValidationError("--pair: '\(text)' is not a pairing URL with a certificate fingerprint (https://...?uuid=...&fp=..., as `serve` prints)")
            }
        }
        if autoSync && noBrowse { throw ValidationError("--auto-sync needs browsing (drop --no-browse)") }
        if anonymous && (!trusted.isEmpty || trustOnFirstUse) { throw ValidationError("--anonymous admits everyone: --trust and --trust-on-first-use mean nothing with it") }
        if let name, name.isEmpty || name.utf8.count > 63 {
            throw ValidationError("--name must be 1 to 63 bytes (a DNS-SD instance name)")
        }
        for origin in corsOrigins where origin != "*" {
            guard let url = URLComponents(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme),
                  url.host?.isEmpty == false, url.path.isEmpty, url.query == nil else {
                throw ValidationError("--cors-origin: '\(origin)' is not an origin like https://app.example:8443 (scheme, host, optional port; no path)")
            }
        }
        _ = try hubURLs()
        for fingerprint in trusted where !TLSIdentity.isFingerprint(fingerprint) {
            throw ValidationError("--trust: not a certificate fingerprint (base64url SHA-256, as `syncnode identity` prints): \(fingerprint)")
        }
    }

    /// `--hub` URLs, with `--hub-credentials` in those that carry none.
    private func hubURLs() throws -> [URL] {
        let credentials = try hubCredentials.map(Self.readHubCredentials)
        return try hubs.map { text in
            guard var url = URLComponents(string: text), let plain = url.url else { throw ValidationError("--hub: '\(text)' is not a URL") }
            do { try MeshConfiguration.checkHub(plain) } catch SyncError.invalidConfiguration(let reason) {
                throw ValidationError("--hub: \(reason)")
            }
            if url.user == nil, let credentials { (url.user, url.password) = credentials }
            return url.url ?? plain
        }
    }

    /// The `USER:PASSWORD` on the first line of `path`.
    private static func readHubCredentials(_ path: String) throws -> (String, String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("--hub-credentials: cannot read \(path)")
        }
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
            throw ValidationError("--hub-credentials: the first line of \(path) is not USER:PASSWORD")
        }
        return (String(line[..<colon]), String(line[line.index(after: colon)...]))
    }

    /// `--subscribe KEYSPACE=JSON` entries, by keyspace.
    private func subscriptions() throws -> [Keyspace: DocumentValue] {
        var out: [Keyspace: DocumentValue] = [:]
        for text in subscribe {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let keyspace = Keyspace(parts[0]) else {
                throw ValidationError("--subscribe: '\(text)' is not KEYSPACE=SELECTOR, e.g. 'orders={\"store\":\"s1\"}'")
            }
            guard let selector = JSONArgument.selector(parts[1]) else {
                throw ValidationError("--subscribe: the selector for \(keyspace) is not a JSON object (a Mango selector): \(parts[1])")
            }
            guard out.updateValue(selector, forKey: keyspace) == nil else { throw ValidationError("--subscribe: \(keyspace) is given twice") }
        }
        return out
    }

    func run() async throws {
        AllocatorTuning.forServing()
        let directory = try NodeDirectory(url: node.directoryURL)
        let served = databases.isEmpty ? ["default"] : databases
        for name in served { _ = try directory.database(name, create: true) }
        let password = self.password ?? Self.environmentPassword
        if self.password != nil {
            Output.error("warning: --password can be read by every user of this machine (ps, /proc); pass it in SYNCNODE_PASSWORD instead")
        }
        let authenticator = try authentication(directory: directory, password: password)
        if anonymous, let host, !["127.0.0.1", "::1", "localhost"].contains(host) {
            Output.error("warning: --anonymous on \(host): whoever can reach this address may read, write and delete every database")
        }
        // Files that can be wrong are read before the node says it is listening.
        let trust: TrustStore
        do { trust = try directory.trustedPeers(adding: trusted, trustOnFirstUse: trustOnFirstUse) } catch { throw CLIError.user("\(error)") }
        let identity = try importedIdentity()
        if !noTls && identity == nil { _ = try directory.tlsIdentity() }
        let listening = ListenerConfiguration(
            directory: directory, databases: databases.isEmpty ? nil : databases, port: port, host: host ?? (anonymous ? "127.0.0.1" : "0.0.0.0"),
            disableTLS: noTls, tlsIdentity: identity, authenticator: authenticator, readOnly: readOnly, allowedOrigins: corsOrigins,
            trustedPeers: anonymous || noTls ? nil : trust, maxAttachmentSize: maxAttachmentMB << 20, idleTimeout: .seconds(idleTimeout))
        var config = MeshConfiguration(directory: directory, listener: listening, trust: trust)
        config.name = name ?? ProcessInfo.processInfo.hostName
        // Databases with members or readers in their _security stay off the LAN-wide TXT record (and so out of auto-sync).
        config.shared = databases.isEmpty ? nil : databases.map(Keyspace.database)
        config.advertise = !noAdvertise
        config.browse = !noBrowse
        config.compression = !noCompression
        config.autoSync = autoSync
        config.peerCredential = BasicAuthenticator(user: user, password: password)
        config.pairingKeyspace = .database(served[0])
        config.conflictResolver = conflicts.resolver
        config.subscriptions = try subscriptions()
        config.hubs = try hubURLs()
        // Here, not in hubURLs(), which validate() runs too: said once.
        if let path = hubCredentials,
           (((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? 0) & 0o077 != 0 {
            Output.error("warning: --hub-credentials \(path) can be read by other users (chmod 600 \(path))")
        }
        config.onEvent = MeshEventPrinter(directory: directory.url).print
        let mesh = MeshNode(configuration: config)
        // Nil too, so `info` stops reporting on a policy no longer in force.
        directory.tombstonePolicy = tombstoneTTL.map { TombstonePolicy(timeToLive: $0.duration, horizon: mesh.tombstoneHorizon) }
        // Who was invited, admitted, refused or untrusted: one line each.
        mesh.listener.environment.auditLog.onEvent { Output.progress("syncnode: \($0.message)") }
        let explicit = try syncWith.map { text in
            let url = try PeerURL.parse(text, option: "--sync-with")
            guard let collection = try directory.database(served[0])?.defaultCollection() else { throw CLIError.user("no database \(served[0])") }
            return (collection, url)
        }
        let paired = try pairWith.map { try PairingURL(string: $0) }
        let qr = qr, trustOnFirstUse = trustOnFirstUse

        // SIGINT and SIGTERM shut the group down gracefully: syncing, advertising and browsing
        // stop first, then the listener lets requests in flight finish.
        let activities = NodeActivities {
            try await mesh.start()
            let pairing: PairingURL
            do {
                for (collection, url) in explicit { try await mesh.sync(with: url, collection: collection, trustOnFirstUse: trustOnFirstUse) }
                for url in paired { try await mesh.pair(with: url) }
                guard let url = mesh.pairingURL else { throw CLIError.network("the listener has no address") }
                pairing = url
            } catch {
                // Started: stopped again before the databases close.
                await mesh.stop()
                throw error
            }
            // Written straight to the file descriptor, once the signals are the group's: scripts wait for this line.
            Output.write(Journal.lines("syncnode: listening on \(pairing.url.absoluteString)\n", level: .notice) + qr.art(pairing.url.absoluteString), to: .standardOutput)
            if pairing.invitation != nil {
                Output.progress("syncnode: that URL is an invitation: for 15 minutes, any device that pairs with it (`syncnode pair URL`) is trusted by its certificate; `syncnode invite` makes one-time ones, `syncnode credential` prints the admin credential for curl and CouchDB")
            }
            return { await mesh.stop() }
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: activities)], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "syncnode.serve")))
        do {
            try await group.run()
        } catch {
            directory.closeAll()
            // A port taken is a network failure (3); a damaged store or identity file is not.
            throw CLIError(error)
        }
        directory.closeAll()
    }

    /// The identity of --tls-cert and --tls-key, nil without them.
    private func importedIdentity() throws -> TLSIdentity? {
        guard let tlsCert, let tlsKey else { return nil }
        func read(_ path: String, _ option: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError.user("\(option): cannot read \(path)") }
            return String(decoding: data, as: UTF8.self)
        }
        do {
            return try TLSIdentity(certificatePEM: read(tlsCert, "--tls-cert"), privateKeyPEM: read(tlsKey, "--tls-key"))
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.user("--tls-cert \(tlsCert) with --tls-key \(tlsKey): \(error)")
        }
    }

    static var environmentPassword: String? {
        ProcessInfo.processInfo.environment["SYNCNODE_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Who may sign in (nil: anyone, with --anonymous): --user or --users, the users of `syncnode
    /// user add`, and, when there are none, the node's own admin credential (which no pairing URL
    /// carries: `syncnode credential` prints it).
    private func authentication(directory: NodeDirectory, password: String?) throws -> ListenerAuthenticator? {
        guard !anonymous else { return nil }
        var credentials = try readCredentials(password: password)
        let store = directory.users
        let stored: [String]
        do { stored = try store.names() } catch { throw CLIError.user("\(error)") }
        if credentials.isEmpty && stored.isEmpty {
            let own = try directory.generatedCredential()
            credentials[own.user] = own.password
        }
        // Users added with `syncnode user add` while the node runs can sign in too.
        return ListenerAuthenticator.users(credentials).fallingBack(to: store.authenticator())
    }

    private func readCredentials(password: String?) throws -> [String: String] {
        var credentials: [String: String] = [:]
        if let user, let password { credentials[user] = password }
        if let users {
            guard let data = FileManager.default.contents(atPath: users),
                  case .dictionary(let entries)? = try? DocumentValue(json: String(decoding: data, as: UTF8.self)) else {
                throw CLIError.user("cannot read users file \(users): expected a JSON object {\"user\": \"password\"}")
            }
            // An empty file is more likely a mistake than a wish: say so.
            guard !entries.isEmpty else { throw CLIError.user("users file \(users) names no user; omit --users (the node then makes a credential of its own) or serve with --anonymous") }
            for (name, value) in entries {
                guard case .string(let secret) = value else { throw CLIError.user("users file: the password of '\(name)' must be a string") }
                credentials[name] = secret
            }
            Output.error("warning: --users \(users) keeps passwords in plain text; move each user to hashed storage with `syncnode user add NAME` (password from SYNCNODE_PASSWORD or stdin), then drop --users")
        }
        return credentials
    }
}

/// Prints one line per certificate that asks to sync without being trusted, saying how to admit it.
/// Anyone can make certificates: past `limit` distinct ones it says so once and stops, so a flood
/// of them neither grows memory nor buries the log.
final class UntrustedPeerReporter: Sendable {
    private let directory: URL
    private let seen = Mutex<Set<String>>([])
    static let limit = 256

    init(directory: URL) {
        self.directory = directory
    }

    func report(fingerprint: String, address: String) {
        let count: Int? = seen.withLock { seen in
            guard seen.count <= Self.limit, seen.insert(fingerprint).inserted else { return nil }
            return seen.count
        }
        guard let count else { return }
        if count > Self.limit {
            Output.progress("syncnode: more than \(Self.limit) unknown certificates asked to sync; no more are reported")
            return
        }
        Output.progress("syncnode: a peer at \(address) with certificate \(fingerprint) asks to sync; admit it with `\(TrustStore.addCommand(fingerprint, directory: directory.path))`")
    }
}
