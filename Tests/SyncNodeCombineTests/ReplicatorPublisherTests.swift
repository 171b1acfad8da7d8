#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Testing
import SyncNodeCombine
import SyncNodeStore
import SyncNodeSync

@Suite struct ReplicatorPublisherTests {
    final class Received<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [T] = []
        func append(_ item: T) { lock.withLock { items.append(item) } }
        var values: [T] { lock.withLock { items } }
    }

    @Test func publishersDeliverStatusAndDocumentsUntilCancelled() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-combine-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try Database(name: "a", config: DatabaseConfiguration(directory: dir))
        let b = try Database(name: "b", config: DatabaseConfiguration(directory: dir))
        defer { try? a.close(); try? b.close() }
        for i in 0..<12 { try a.defaultCollection().save(try MutableDocument(id: "d\(i)", data: ["i": i])) }
        var config = ReplicatorConfiguration(collection: try a.defaultCollection(), target: .collection(try b.defaultCollection()))
        config.replicatorType = .push
        config.batchSize = 5
        let replicator = Replicator(config: config)

        let activities = Received<ReplicatorActivity>()
        let documents = Received<String>()
        let queue = DispatchQueue(label: "test.publishers")
        let statusSubscription = replicator.changePublisher(on: queue).sink { activities.append($0.status.activity) }
        let documentSubscription = replicator.documentReplicationPublisher(on: queue)
            .filter(\.isPush)
            .sink { batch in batch.documents.forEach { documents.append($0.id) } }

        replicator.start()
        await replicator.waitUntilStopped()
        queue.sync {}  // deliveries queued before this point have run
        #expect(activities.values.first == .connecting && activities.values.contains(.busy) && activities.values.last == .stopped)
        #expect(Set(documents.values) == Set((0..<12).map { "d\($0)" }))

        // Cancelled subscriptions hear nothing more.
        statusSubscription.cancel()
        documentSubscription.cancel()
        let heard = activities.values.count
        try a.defaultCollection().save(MutableDocument(id: "late"))
        replicator.start()
        await replicator.waitUntilStopped()
        queue.sync {}
        #expect(activities.values.count == heard)
        #expect(try b.defaultCollection().document(id: "late") != nil)
    }
}
