import Foundation
import Synchronization
import Testing
@testable import SyncNodeDiscovery

/// Without D-Bus (here: pointed at a socket that does not exist) the
/// advertiser and browser report unavailability once, keep retrying quietly,
/// and stop cleanly. The multi-node test covers a bus without avahi-daemon.
@Suite(.serialized) struct AvahiUnavailableTests {
    @Test func noBusIsReportedOnceAndStopIsClean() async throws {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/syncnode-test-bus", 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let reports = Mutex<[DiscoveryStatus]>([])
        let advertiser = try Advertiser(
            record: ServiceRecord(name: "n", port: 1, uuid: "u", keyspaces: [], tls: false, fingerprint: nil, requiresAuth: false),
            onStatus: { status in reports.withLock { $0.append(status) } })
        advertiser.start()
        // Longer than one retry interval: the retry must not report again.
        try await Task.sleep(for: AvahiConnection.retryInterval + .milliseconds(800))
        advertiser.stop()
        let seen = reports.withLock { $0 }
        #expect(seen.count == 1)
        guard case .unavailable(let reason)? = seen.first else { Issue.record("no unavailable report: \(seen)"); return }
        #expect(reason.contains("D-Bus"))
    }
}
