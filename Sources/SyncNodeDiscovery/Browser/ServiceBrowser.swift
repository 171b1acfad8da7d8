import CAvahi
import Foundation
import Logging

/// One resolved instance of a service, as seen on one interface and protocol.
struct Sighting: Sendable, Equatable {
    struct Key: Hashable, Sendable {
        let interface: Int32
        let proto: Int32
        let name: String
    }

    let key: Key
    let record: ServiceRecord
    /// The resolved address (a link-local IPv6 address with its `%interface`).
    let address: String
}

/// What the Avahi side reports to the tracker.
enum SightingEvent: Sendable {
    case resolved(Sighting)
    case removed(Sighting.Key)
}

/// Browses `_syncnode._tcp` through avahi-daemon and keeps a resolver per
/// instance (so TXT and address changes are reported too), turning Avahi's
/// callbacks into ``SightingEvent``s. It knows nothing of peers' identities.
final class ServiceBrowser: @unchecked Sendable, AvahiConnectionUser {
    private let connection: AvahiConnection
    private let logger: Logger
    private let emit: @Sendable (SightingEvent) -> Void
    private var browser: OpaquePointer?                      // poll thread or lock
    private var resolvers: [Sighting.Key: OpaquePointer] = [:]  // poll thread or lock

    init(logger: Logger, onStatus: @escaping @Sendable (DiscoveryStatus) -> Void, emit: @escaping @Sendable (SightingEvent) -> Void) throws {
        self.logger = logger
        self.emit = emit
        connection = try AvahiConnection(logger: logger, onStatus: onStatus)
        connection.user = self
    }

    func start() { connection.start() }
    func stop() { connection.stop() }

    // Avahi's callbacks hold this object unretained: the poll thread stops before it goes.
    deinit { connection.stop() }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    // MARK: - AvahiConnectionUser (on the poll thread)

    func avahiClientRunning(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, AvahiConnection.anyInterface, AvahiConnection.anyProtocol, ServiceRecord.serviceType, nil, AvahiLookupFlags(0),
            { _, interface, proto, event, name, _, _, _, context in
                // Avahi gives no name with FAILURE, ALL_FOR_NOW and CACHE_EXHAUSTED.
                guard let context else { return }
                Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue()
                    .browsed(event, name.map { Sighting.Key(interface: interface, proto: proto, name: String(cString: $0)) })
            }, context)
        if browser == nil {
            logger.error("cannot browse", metadata: ["error": "\(String(cString: avahi_strerror(avahi_client_errno(client))))"])
        }
    }

    func avahiClientRegistering() {}

    func avahiClientLost() {
        // Freed with the client. What was seen stays seen: the peers' liveness probes decide.
        browser = nil
        resolvers = [:]
    }

    private func browsed(_ event: AvahiBrowserEvent, _ key: Sighting.Key?) {
        switch (event, key) {
        case (AVAHI_BROWSER_NEW, let key?):
            guard resolvers[key] == nil else { return }
            resolve(key)
        case (AVAHI_BROWSER_REMOVE, let key?):
            if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
            emit(.removed(key))
        case (AVAHI_BROWSER_FAILURE, _):
            // A failed browser reports nothing more: browse again on the same client.
            guard let failed = browser, let client = avahi_service_browser_get_client(failed) else { return }
            logger.error("browsing failed; browsing again", metadata: ["error": "\(String(cString: avahi_strerror(avahi_client_errno(client))))"])
            avahi_service_browser_free(failed)
            browser = nil
            avahiClientRunning(client)
        default:
            break
        }
    }

    /// Resolves in the default domain (`local`, the only one browsed), to an address of the
    /// protocol the service was seen on: with any protocol, an IPv4 sighting may resolve to
    /// the host's link-local IPv6 address, which an IPv4-only listener (the default) refuses.
    private func resolve(_ key: Sighting.Key) {
        guard let browser, let client = avahi_service_browser_get_client(browser) else { return }
        let resolver = avahi_service_resolver_new(
                client, key.interface, key.proto, key.name, ServiceRecord.serviceType, nil, key.proto, AvahiLookupFlags(0),
                { _, interface, proto, event, name, _, _, _, address, port, txt, _, context in
                    guard let context, let name else { return }
                    let browser = Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue()
                    let key = Sighting.Key(interface: interface, proto: proto, name: String(cString: name))
                    guard event == AVAHI_RESOLVER_FOUND, let address else {
                        browser.failed(key)
                        return
                    }
                    browser.resolved(key, address: address, port: Int(port), txt: txt)
                }, context)
        if let resolver { resolvers[key] = resolver }
    }

    /// A resolver that timed out (lost packets) would never report again: ask anew while the service is listed.
    private func failed(_ key: Sighting.Key) {
        logger.debug("cannot resolve, asking again", metadata: ["name": "\(key.name)"])
        guard let resolver = resolvers.removeValue(forKey: key) else { return }
        avahi_service_resolver_free(resolver)
        resolve(key)
    }

    private func resolved(_ key: Sighting.Key, address: UnsafePointer<AvahiAddress>, port: Int, txt: UnsafeMutablePointer<AvahiStringList>?) {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&buffer, buffer.count, address)
        var host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if address.pointee.proto == AVAHI_PROTO_INET6, host.lowercased().hasPrefix("fe80:") {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(UInt32(key.interface), &name) != nil {
                host += "%" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        var entries: [String] = []
        var item = txt
        while let current = item {
            entries.append(String(decoding: UnsafeBufferPointer(start: avahi_string_list_get_text(current), count: avahi_string_list_get_size(current)), as: UTF8.self))
            item = avahi_string_list_get_next(current)
        }
        do {
            emit(.resolved(Sighting(key: key, record: try ServiceRecord(name: key.name, port: port, txt: entries), address: host)))
        } catch {
            logger.debug("ignoring a service", metadata: ["reason": "\(error)"])
        }
    }
}
