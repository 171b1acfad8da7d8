import Dispatch
import Foundation
import Testing
@testable import SyncNodeStore

@Suite struct LiveQueryTests {
    /// A live query on a collection that does not exist yet reports the error,
    /// then results once it is created; and it follows a collection deleted and made again.
    @Test func followsCollectionsCreatedAndDeletedLater() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let query = try db.createQuery("SELECT meta().id FROM later ORDER BY meta().id")
        let seen = Collector<[String]>()
        let token = query.addChangeListener { change in
            seen.append(change.results?.compactMap { $0.string(forKey: "id") } ?? ["error"])
        }
        defer { token.remove() }
        // The latest results reach `expected` (a created collection is first seen empty).
        func settles(to expected: [String]) async -> Bool {
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while seen.values.last != expected, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            return seen.values.last == expected
        }
        #expect(await seen.wait(count: 1) == [["error"]])
        try db.createCollection(name: "later").save(MutableDocument(id: "a"))
        #expect(await settles(to: ["a"]), "\(seen.values)")
        try db.deleteCollection(name: "later")
        #expect(await settles(to: ["error"]), "\(seen.values)")
        try db.createCollection(name: "later").save(MutableDocument(id: "b"))
        #expect(await settles(to: ["b"]), "\(seen.values)")
        try db.collection(name: "later")?.save(MutableDocument(id: "c"))
        #expect(await settles(to: ["b", "c"]), "\(seen.values)")
        // Deleted and made again at once (a new table ID): the query compiles again and follows it.
        try db.deleteCollection(name: "later")
        try db.createCollection(name: "later").save(MutableDocument(id: "d"))
        #expect(await settles(to: ["d"]), "\(seen.values)")
        #expect(try query.execute().compactMap { $0.string(forKey: "id") } == ["d"])
        // Made inside a batch: told once the batch commits (before, the new collection was not visible yet).
        try db.deleteCollection(name: "later")
        #expect(await settles(to: ["error"]), "\(seen.values)")
        try db.inBatch { try db.createCollection(name: "later").save(MutableDocument(id: "e")) }
        #expect(await settles(to: ["e"]), "\(seen.values)")
    }

    @Test func notifiesFirstResultsThenOnlyChanges() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let tasks = try db.createCollection(name: "tasks")
        let other = try db.createCollection(name: "other")
        let query = try db.createQuery("SELECT meta().id, title FROM tasks WHERE done = false ORDER BY meta().id")
        let seen = Collector<[String]>()
        let queue = DispatchQueue(label: "test.live")
        let token = query.addChangeListener(on: queue) { change in
            dispatchPrecondition(condition: .onQueue(queue))
            seen.append(change.results?.compactMap { $0.string(forKey: "id") } ?? ["error: \(String(describing: change.error))"])
        }
        #expect(await seen.wait(count: 1) == [[]])

        let t1 = MutableDocument(id: "t1")
        t1.setString("milk", forKey: "title")
        t1.setBoolean(false, forKey: "done")
        try tasks.save(t1)
        #expect(await seen.wait(count: 2).last == ["t1"])

        // A commit elsewhere, or one that leaves the results alone, notifies nobody.
        let o = MutableDocument(id: "o")
        o.setBoolean(false, forKey: "done")
        try other.save(o)
        let t2 = MutableDocument(id: "t2")
        t2.setBoolean(true, forKey: "done")
        try tasks.save(t2)
        // Runs are ordered: had those commits notified, that would arrive before this change's.
        let t3 = MutableDocument(id: "t3")
        t3.setBoolean(false, forKey: "done")
        try tasks.save(t3)
        #expect(await seen.wait(count: 3) == [[], ["t1"], ["t1", "t3"]])

        // A burst of commits coalesces: each run scans thousands of documents, far
        // longer than a one-document commit takes, so runs cover several commits.
        try db.inBatch {
            for i in 0..<5000 {
                let d = MutableDocument(id: "filler\(i)")
                d.setBoolean(true, forKey: "done")
                try tasks.save(d)
            }
        }
        let before = seen.values.count
        for i in 0..<50 {
            let d = MutableDocument(id: "burst\(i)")
            d.setBoolean(false, forKey: "done")
            try tasks.save(d)
        }
        let deadline = Date().addingTimeInterval(10)
        while seen.values.last?.count != 52, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(seen.values.last?.count == 52)
        #expect(seen.values.count - before < 50, "50 commits, \(seen.values.count - before) notifications")

        token.remove()
        let count = seen.values.count
        try tasks.purge(id: "t1")
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.values.count == count)
        #expect(db.notifier.listenerCount == 0)
        #expect(query.live.count == 0)
        try db.close()
    }

    @Test func parametersRerunAndStreamEnds() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        for (id, city) in [("a", "Paris"), ("b", "Lyon")] {
            let d = MutableDocument(id: id)
            d.setString(city, forKey: "city")
            try c.save(d)
        }
        let query = try db.createQuery("SELECT meta().id FROM _ WHERE city = $city")
        query.parameters = Parameters().setString("Paris", forName: "city")
        var iterator = query.changes().makeAsyncIterator()
        #expect(try await iterator.next()?.compactMap { $0.string(at: 0) } == ["a"])
        query.parameters = Parameters().setString("Lyon", forName: "city")
        #expect(try await iterator.next()?.compactMap { $0.string(at: 0) } == ["b"])

        // A query that cannot run reports its error.
        let broken = try db.createQuery("SELECT meta().id FROM nosuch")
        let errors = Collector<String>()
        let token = broken.addChangeListener(on: DispatchQueue(label: "t")) { errors.append("\($0.error.map { "\($0)" } ?? "none")") }
        #expect(await errors.wait(count: 1).first?.contains("no collection 'nosuch'") == true)
        token.remove()
        try db.close()
    }
}
