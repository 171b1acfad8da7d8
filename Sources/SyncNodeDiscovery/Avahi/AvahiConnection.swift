import CAvahi
import Foundation
import Logging

/// Whether DNS-SD works right now.
public enum DiscoveryStatus: Sendable, Equatable {
    /// Connected to avahi-daemon.
    case running
    /// No daemon (or no D-Bus): waiting for it; the reason says what is missing.
    case unavailable(String)
}

/// What uses an ``AvahiConnection``: told, on the connection's poll thread,
/// when the client can be used and when what was made with it is gone.
protocol AvahiConnectionUser: AnyObject {
    /// The client runs (at first, or again after the daemon came back): publish or browse with it.
    func avahiClientRunning(_ client: OpaquePointer)
    /// The host name is being re-registered (a collision): withdraw entries until running again.
    func avahiClientRegistering()
    /// The client is about to be freed, and with it every object made with it.
    func avahiClientLost()
}

/// One connection to avahi-daemon through its D-Bus client API: an
/// `AvahiThreadedPoll` thread and a client that is made again whenever the
/// daemon goes away (client flag NO_FAIL waits for it to come back; when D-Bus
/// itself is missing the client cannot even wait, so a timer retries).
///
/// Avahi calls back on the poll thread with the poll lock held; calls from any
/// other thread go through ``withLock(_:)``.
final class AvahiConnection: @unchecked Sendable {
    private let poll: OpaquePointer
    private let api: UnsafePointer<AvahiPoll>
    private var client: OpaquePointer?        // poll thread or lock
    private var retry: OpaquePointer?         // AvahiTimeout*, poll thread or lock
    private var status: DiscoveryStatus?      // poll thread or lock
    /// Set once, right after init (the user owns the connection).
    weak var user: AvahiConnectionUser?
    private let onStatus: @Sendable (DiscoveryStatus) -> Void
    private let logger: Logger
    private var started = false

    /// How long to wait before trying again when D-Bus is unreachable.
    static let retryInterval: Duration = .seconds(2)

    init(logger: Logger, onStatus: @escaping @Sendable (DiscoveryStatus) -> Void) throws {
        guard let poll = avahi_threaded_poll_new() else { throw DiscoveryError.unavailable("cannot create an Avahi poll loop") }
        guard let api = avahi_threaded_poll_get(poll) else {
            avahi_threaded_poll_free(poll)
            throw DiscoveryError.unavailable("cannot create an Avahi poll loop")
        }
        self.poll = poll
        self.api = api
        self.logger = logger
        self.onStatus = onStatus
    }

    deinit {
        stop()
        avahi_threaded_poll_free(poll)
    }

    /// Starts the poll thread and connects (or keeps trying to).
    func start() {
        withLock { connect() }
        if avahi_threaded_poll_start(poll) < 0 {
            report(.unavailable("cannot start the Avahi poll thread"))
            return
        }
        started = true
    }

    /// Stops the thread and frees the client (the daemon withdraws what it published).
    func stop() {
        if started { avahi_threaded_poll_stop(poll) }
        started = false
        if let retry { api.pointee.timeout_free?(retry) }
        retry = nil
        if let client {
            user?.avahiClientLost()
            avahi_client_free(client)
        }
        client = nil
    }

    /// Runs `body` holding the poll lock: for calls into Avahi from outside its callbacks.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        guard started else { return try body() }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func connect() {
        var error: Int32 = 0
        let made = avahi_client_new(api, AVAHI_CLIENT_NO_FAIL, { client, state, context in
            guard let client, let context else { return }
            Unmanaged<AvahiConnection>.fromOpaque(context).takeUnretainedValue().changed(client, state)
        }, context, &error)
        guard let made else {
            report(.unavailable("cannot reach the D-Bus system bus (\(String(cString: avahi_strerror(error)))); is dbus-daemon running? Retrying every \(Self.retryInterval)"))
            scheduleRetry()
            return
        }
        client = made
    }

    private func changed(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            self.client = client
            report(.running)
            user?.avahiClientRunning(client)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            user?.avahiClientRegistering()
        case AVAHI_CLIENT_CONNECTING:
            report(.unavailable("avahi-daemon is not running; discovery starts when it does (the node keeps serving; pair by URL meanwhile)"))
        case AVAHI_CLIENT_FAILURE:
            let reason = String(cString: avahi_strerror(avahi_client_errno(client)))
            report(.unavailable("lost avahi-daemon (\(reason)); waiting for it to come back"))
            user?.avahiClientLost()
            // Freeing the client inside its own callback is what Avahi's own users do to reconnect.
            avahi_client_free(client)
            self.client = nil
            connect()
        default:
            break
        }
    }

    private func scheduleRetry() {
        var when = timeval()
        gettimeofday(&when, nil)
        when.tv_sec += Int(Self.retryInterval.components.seconds)
        retry = api.pointee.timeout_new?(api, &when, { _, context in
            guard let context else { return }
            let connection = Unmanaged<AvahiConnection>.fromOpaque(context).takeUnretainedValue()
            if let retry = connection.retry { connection.api.pointee.timeout_free?(retry) }
            connection.retry = nil
            connection.connect()
        }, context)
    }

    private func report(_ new: DiscoveryStatus) {
        guard new != status else { return }
        status = new
        switch new {
        case .running: logger.info("DNS-SD available")
        case .unavailable(let reason): logger.debug("DNS-SD unavailable", metadata: ["reason": "\(reason)"])
        }
        onStatus(new)
    }
}

extension AvahiConnection {
    /// `AVAHI_IF_UNSPEC` and `AVAHI_PROTO_UNSPEC`, typed (Swift imports the macros as Int).
    static let anyInterface = AvahiIfIndex(AVAHI_IF_UNSPEC)
    static let anyProtocol = AvahiProtocol(AVAHI_PROTO_UNSPEC)
}
