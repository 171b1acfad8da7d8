import CAvahi
import Foundation
import Logging
import SyncNodeSync

/// Publishes a node's listener as a DNS-SD service through avahi-daemon.
///
/// It renames itself on a name collision (`NAME #2`, as Avahi suggests),
/// publishes again when the daemon restarts, and withdraws on ``stop()``.
/// Without a daemon it reports ``DiscoveryStatus/unavailable(_:)`` once and
/// publishes by itself when one appears.
///
/// ```swift
/// let advertiser = try Advertiser(record: ServiceRecord(name: "kitchen", port: port, uuid: node.uuid,
///     databases: ["default"], tls: true, fingerprint: identity.fingerprint, requiresAuth: true))
/// advertiser.start()
/// ```
public final class Advertiser: @unchecked Sendable, AvahiConnectionUser {
    private var record: ServiceRecord              // poll thread or lock
    private var group: OpaquePointer?              // AvahiEntryGroup*, poll thread or lock
    private var published = false                  // the daemon announced it; poll thread or lock
    private let connection: AvahiConnection
    private let logger: Logger

    /// - parameters:
    ///   - record: the service to publish: name, port and TXT record.
    ///   - logger: where publishing, renames on collision and daemon restarts are logged.
    ///   - onStatus: told (on Avahi's thread; return quickly) when DNS-SD becomes available or unavailable.
    public init(record: ServiceRecord, logger: Logger = Logger(label: "syncnode.advertiser"),
                onStatus: @escaping @Sendable (DiscoveryStatus) -> Void = { _ in }) throws {
        self.record = record
        self.logger = logger
        connection = try AvahiConnection(logger: logger, onStatus: onStatus)
        connection.user = self
        warnIfKeyspacesOmitted()
    }

    /// Peers learn which keyspaces to sync from `dbs`: say when some did not fit (`more=1` then
    /// sends them to `GET /_node/keyspaces`, which a peer that may not sign in cannot read).
    private func warnIfKeyspacesOmitted() {
        let omitted = record.keyspaces.count - record.listedKeyspaces.count
        if omitted > 0 {
            logger.warning("the TXT record lists only some keyspaces (255 bytes); peers ask the node for the others",
                           metadata: ["omitted": "\(omitted)"])
        }
    }

    /// Starts publishing (now, or when the daemon appears).
    public func start() { connection.start() }

    /// Withdraws the service and disconnects.
    public func stop() { connection.stop() }

    // Avahi's callbacks hold this object unretained: the poll thread stops before it goes.
    deinit { connection.stop() }

    /// The instance name in use: the configured one, or the one a collision led to.
    public var name: String { connection.withLock { record.name } }

    /// Whether the daemon has announced the service (its probing, about a second, is done).
    public var isPublished: Bool { connection.withLock { published } }

    /// Replaces the advertised keyspaces (the TXT record's `dbs`).
    public func update(keyspaces: [Keyspace]) {
        connection.withLock {
            guard keyspaces != record.keyspaces else { return }
            record.keyspaces = keyspaces
            warnIfKeyspacesOmitted()
            guard let group, published else { return }
            let status = withTXT(record.txt) { txt in
                avahi_entry_group_update_service_txt_strlst(
                    group, AvahiConnection.anyInterface, AvahiConnection.anyProtocol, AvahiPublishFlags(0), record.name, ServiceRecord.serviceType, nil, txt)
            }
            if status < 0 { logger.warning("cannot update the TXT record", metadata: ["error": "\(String(cString: avahi_strerror(status)))"]) }
        }
    }

    // MARK: - AvahiConnectionUser (on the poll thread)

    func avahiClientRunning(_ client: OpaquePointer) {
        publish(client)
    }

    func avahiClientRegistering() {
        if let group { avahi_entry_group_reset(group) }
        published = false
    }

    func avahiClientLost() {
        // The client frees its groups.
        group = nil
        published = false
    }

    private func publish(_ client: OpaquePointer) {
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, context in
                guard let group, let context else { return }
                Unmanaged<Advertiser>.fromOpaque(context).takeUnretainedValue().changed(group, state)
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        guard let group else {
            logger.error("cannot create an Avahi entry group", metadata: ["error": "\(String(cString: avahi_strerror(avahi_client_errno(client))))"])
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        while true {
            let status = withTXT(record.txt) { txt in
                avahi_entry_group_add_service_strlst(
                    group, AvahiConnection.anyInterface, AvahiConnection.anyProtocol, AvahiPublishFlags(0), record.name, ServiceRecord.serviceType,
                    nil, nil, UInt16(truncatingIfNeeded: record.port), txt)
            }
            // A service of this host already has the name: try the next alternative.
            if status == AVAHI_ERR_COLLISION, rename() { continue }
            if status < 0 {
                logger.error("cannot publish the service", metadata: ["error": "\(String(cString: avahi_strerror(status)))"])
                return
            }
            break
        }
        let status = avahi_entry_group_commit(group)
        if status < 0 { logger.error("cannot commit the service", metadata: ["error": "\(String(cString: avahi_strerror(status)))"]) }
    }

    private func changed(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            published = true
            logger.info("advertising", metadata: ["name": "\(record.name)", "type": "\(ServiceRecord.serviceType)", "port": "\(record.port)"])
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host has the name: take the next alternative and publish again.
            guard rename() else { return }
            avahi_entry_group_reset(group)
            if let client = avahi_entry_group_get_client(group) { publish(client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let client = avahi_entry_group_get_client(group)
            logger.error("publishing failed", metadata: ["error": "\(client.map { String(cString: avahi_strerror(avahi_client_errno($0))) } ?? "?")"])
        default:
            break
        }
    }

    /// Takes Avahi's next alternative name (`NAME #2`, ...); false if it has none (out of memory).
    private func rename() -> Bool {
        guard let alternative = avahi_alternative_service_name(record.name) else {
            logger.error("service name taken and no alternative name", metadata: ["name": "\(record.name)"])
            return false
        }
        defer { avahi_free(alternative) }
        let old = record.name
        record.name = String(cString: alternative)
        logger.notice("service name taken, renamed", metadata: ["was": "\(old)", "now": "\(record.name)"])
        return true
    }
}

/// Runs `body` with the entries as an Avahi string list (built back to front: `avahi_string_list_add` prepends).
func withTXT<T>(_ entries: [String], _ body: (UnsafeMutablePointer<AvahiStringList>?) -> T) -> T {
    var list: UnsafeMutablePointer<AvahiStringList>?
    for entry in entries.reversed() { list = avahi_string_list_add(list, entry) }
    defer { avahi_string_list_free(list) }
    return body(list)
}
