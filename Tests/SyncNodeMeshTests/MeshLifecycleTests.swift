import Foundation
import Logging
import ServiceLifecycle
import Testing
@testable import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync
import SyncNodeTestSupport

/// A mesh node's start that fails after its listener bound leaves nothing serving, whether
/// started by hand or run in a `ServiceGroup`; a group's shutdown stops a node it runs.
@Suite(.serialized, .timeLimit(.minutes(10))) struct MeshLifecycleTests {
    @Test func aStartThatFailsAfterTheListenerBoundLeavesNothingServing() async throws {
        // The port a node bound and let go: the failing starts below bind it again.
        let first = try MeshNodeTests.Node(name: "first")
        try await first.mesh.start()
        let port = try #require(first.mesh.listener.port)
        await first.mesh.stop()
        let a = try MeshNodeTests.Node(name: "a") { $0.listener.port = port }
        // Where the node records its address is taken by a folder: the record fails, after the bind.
        let running = a.directory.home.runningFile
        try FileManager.default.createDirectory(at: running.appendingPathComponent("occupied"), withIntermediateDirectories: true)
        await #expect(throws: (any Error).self) { try await a.mesh.start() }
        #expect(a.mesh.listener.port == nil && a.mesh.pairingURL == nil)

        let group = ServiceGroup(configuration: .init(services: [a.mesh], logger: Logger(label: "test")))
        await #expect(throws: (any Error).self) { try await group.run() }
        #expect(a.mesh.listener.port == nil && a.mesh.pairingURL == nil)
        // Nothing of either start is left serving: the port binds again.
        let next = Listener(config: ListenerConfiguration(directory: first.directory, port: port, host: "127.0.0.1", disableTLS: true))
        try await next.start()
        await next.stop()
    }

    @Test func aGroupsGracefulShutdownStopsANodeItRuns() async throws {
        let a = try MeshNodeTests.Node(name: "a")
        let group = ServiceGroup(configuration: .init(services: [a.mesh], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        // However long it takes: a whole run on 2 cores can keep the group's task waiting (the
        // suite's time limit guards against a hang).
        while a.mesh.pairingURL == nil { try await Task.sleep(for: .milliseconds(20)) }
        let url = try #require(a.mesh.pairingURL)
        #expect(try await a.curl("/").contains("\"couchdb\""))
        #expect(RunningNode.read(directory: a.directory)?.port == url.port)

        await group.triggerGracefulShutdown()
        try await running.value
        #expect(a.mesh.listener.port == nil && a.mesh.pairingURL == nil)
        #expect(RunningNode.read(directory: a.directory) == nil, "a stopped node still reads as running")
    }

    /// A database, or a collection, deleted and made again under running nodes is synced again:
    /// the replications of the old one stop, and new ones start, both ways.
    @Test func aDatabaseMadeAgainIsSyncedAgain() async throws {
        typealias Node = MeshNodeTests.Node
        let a = try Node(name: "a", shared: ["notes"]), b = try Node(name: "b", shared: ["notes"])
        func notes(_ node: Node) throws -> DocumentCollection { try #require(try node.directory.database("notes", create: true)).defaultCollection() }
        try notes(a).save(try MutableDocument(id: "before", data: [:]))
        _ = try notes(b)
        try await a.mesh.start()
        try await b.mesh.start()
        try await b.mesh.pair(with: try #require(a.mesh.pairingURL))
        try await a.mesh.pair(with: try #require(b.mesh.pairingURL))
        let check = MeshNodeTests()
        #expect(try await check.eventually { try notes(b).document(id: "before") != nil })

        try b.directory.deleteDatabase("notes")
        try notes(b).save(try MutableDocument(id: "b-after", data: [:]))
        try notes(a).save(try MutableDocument(id: "a-after", data: [:]))
        // a's pull from b failed while b had no "notes", and restarts after up to 30 s
        // (`RetryPolicy.meshRestart`): more than the usual wait under a loaded suite.
        #expect(try await eventually(within: 90) { try notes(b).document(id: "a-after") != nil && notes(b).document(id: "before") != nil })
        #expect(try await eventually(within: 90) { try notes(a).document(id: "b-after") != nil })

        // A collection deleted and made again in a database that stays.
        func tasks(_ node: Node) throws -> DocumentCollection {
            try #require(try node.directory.database("notes")).createCollection(name: "tasks", scope: "app")
        }
        try tasks(a).save(try MutableDocument(id: "t1", data: [:]))
        #expect(try await check.eventually { try tasks(b).document(id: "t1") != nil })
        try #require(try b.directory.database("notes")).deleteCollection(name: "tasks", scope: "app")
        try tasks(a).save(try MutableDocument(id: "t2", data: [:]))
        #expect(try await check.eventually { try tasks(b).document(id: "t2") != nil && tasks(b).document(id: "t1") != nil })
        await b.mesh.stop()
        await a.mesh.stop()
    }
}
