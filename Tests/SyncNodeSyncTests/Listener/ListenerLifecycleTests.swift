import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import Testing
@testable import SyncNodeSync

/// A listener run as a service of the caller's `ServiceGroup`: it serves in the group's task,
/// the group's shutdown stops it gracefully, and a sibling service's failure stops it too.
@Suite(.timeLimit(.minutes(10))) struct ListenerLifecycleTests {
    /// A service that fails once the listener serves.
    struct Failing: Service {
        struct Failure: Error {}
        let after: @Sendable () async -> Void
        func run() async throws {
            await after()
            throw Failure()
        }
    }

    /// A node directory for `body`, removed after it.
    static func withNode(_ body: (NodeDirectory) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-lifecycle-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = try NodeDirectory(url: dir)
        defer { node.closeAll() }
        try await body(node)
    }

    /// A plain-HTTP listener on loopback, at `port` (0: any free one).
    static func listener(_ node: NodeDirectory, port: Int = 0) -> Listener {
        Listener(config: ListenerConfiguration(directory: node, port: port, host: "127.0.0.1", disableTLS: true))
    }

    /// Checks that nothing serves `port` any more: a new listener binds it, or, when something
    /// else holds it (in a loaded whole run, another test's connection may get it as its own
    /// end once it is free), no connection to it is accepted. That fallback would miss a stopped
    /// listener that kept its socket bound without listening.
    static func expectFree(_ port: Int, _ node: NodeDirectory) async throws {
        let next = listener(node, port: port)
        do {
            try await next.start()
        } catch {
            let accepted = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            #expect(accepted == nil, "port \(port) still takes connections (\(error))")
            try? await accepted?.close()
            return
        }
        #expect(next.port == port)
        await next.stop()
    }

    /// Waits until `listener` has bound, however long that takes (the suite's time limit guards
    /// against a hang): in a whole run on 2 cores, beside the hostile campaign, it took 100 s.
    static func bound(_ listener: Listener) async throws -> Int {
        while listener.port == nil { try await Task.sleep(for: .milliseconds(20)) }
        return try #require(listener.port)
    }

    @Test func aGroupsGracefulShutdownStopsAListenerItRuns() async throws {
        try await Self.withNode { node in
            // Any free port, read once bound: a port found free beforehand was taken by another
            // test's listener before this one bound it, in a loaded whole run.
            let listener = Self.listener(node)
            let group = ServiceGroup(configuration: .init(services: [listener], logger: Logger(label: "test")))
            let running = Task { try await group.run() }
            let port = try await Self.bound(listener)
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
            let answer = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(10))
            _ = try await answer.body.collect(upTo: 1 << 20)
            try await client.shutdown()
            #expect(answer.status == .ok)

            await group.triggerGracefulShutdown()
            try await running.value
            #expect(listener.port == nil)
            try await Self.expectFree(port, node)
        }
    }

    @Test func aSiblingsFailureStopsAListenerTheGroupRuns() async throws {
        try await Self.withNode { node in
            let listener = Self.listener(node)
            let bound = Mutex<Int?>(nil)
            let failing = Failing {
                let port = try? await Self.bound(listener)
                bound.withLock { $0 = port }
            }
            let group = ServiceGroup(configuration: .init(services: [listener, failing], logger: Logger(label: "test")))
            await #expect(throws: Failing.Failure.self) { try await group.run() }
            #expect(listener.port == nil)
            try await Self.expectFree(try #require(bound.withLock { $0 }), node)
        }
    }

    /// A port taken: run() throws the bind error, and the group ends with it.
    @Test func aListenerThatCannotBindFailsTheGroup() async throws {
        try await Self.withNode { node in
            let holder = Self.listener(node)
            try await holder.start()
            let port = try #require(holder.port)
            let listener = Self.listener(node, port: port)
            let group = ServiceGroup(configuration: .init(services: [listener], logger: Logger(label: "test")))
            await #expect { try await group.run() } throws: { error in
                guard case SyncError.listenerFailed(let reason) = error else { return false }
                return reason.contains("cannot listen on 127.0.0.1:\(port)")
            }
            #expect(listener.port == nil)
            await holder.stop()
        }
    }
}
