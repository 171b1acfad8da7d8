import Foundation
import Observation
import Testing
@testable import SyncNodeStore

/// The AsyncSequence twins of the publishers, and the Observation holder.
final class ChangeStreamTests: TasksFixture {
    struct Todo: Codable, Equatable, Sendable {
        @DocumentID var id: String? = nil
        var title: String
        var completed = false
    }

    /// Waits until the store has no listeners left (removal follows cancellation asynchronously).
    static func listenersGone(_ db: Database) async throws -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while db.notifier.listenerCount > 0, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return db.notifier.listenerCount == 0
    }

    @Test func streamsDeliverInCommitOrderAndEndOnCancellation() async throws {
        let (db, tasks) = (self.db, self.tasks)
        let collected = Collector<String>()
        let ready = Collector<Bool>()
        let collectionTask = Task {
            var stream = tasks.changes().makeAsyncIterator()
            ready.append(true)
            while let change = await stream.next() { collected.append("c:" + change.documentIDs.joined(separator: ",")) }
            collected.append("c:end")
        }
        let documentTask = Task {
            for await change in tasks.documentChanges(for: "b") { collected.append("d:" + change.documentID) }
            collected.append("d:end")
        }
        let queryTask = Task {
            do {
                for try await results in try db.createQuery("SELECT title FROM tasks ORDER BY title").changes() {
                    collected.append("q:" + results.map { $0.string(forKey: "title") ?? "?" }.joined(separator: ","))
                }
                collected.append("q:end")
            } catch {
                collected.append("q:error \(error)")
            }
        }
        _ = await ready.wait(count: 1)
        // Three listeners registered (the query's after its first run).
        let deadline = Date().addingTimeInterval(5)
        while collected.values.isEmpty || db.notifier.listenerCount < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }

        try tasks.save(MutableDocument(id: "a", data: ["title": "a"]))
        try db.inBatch {
            try tasks.save(MutableDocument(id: "b", data: ["title": "b"]))
            try tasks.save(MutableDocument(id: "c", data: ["title": "c"]))
        }
        let deadline2 = Date().addingTimeInterval(5)
        while !(collected.values.contains("q:a,b,c") && collected.values.contains("c:b,c") && collected.values.contains("d:b")), Date() < deadline2 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let values = collected.values
        #expect(values.filter { $0.hasPrefix("c:") } == ["c:a", "c:b,c"])
        #expect(values.filter { $0.hasPrefix("d:") } == ["d:b"])
        #expect(values.filter { $0.hasPrefix("q:") }.first == "q:")
        #expect(values.filter { $0.hasPrefix("q:") }.last == "q:a,b,c")

        collectionTask.cancel()
        documentTask.cancel()
        queryTask.cancel()
        _ = await collectionTask.value
        _ = await documentTask.value
        _ = await queryTask.value
        #expect(collected.values.suffix(3).sorted() == ["c:end", "d:end", "q:end"])
        #expect(try await Self.listenersGone(db))
    }

    @MainActor
    @Test func liveResultsFollowTheQueryOnTheMainActor() async throws {
        let query = try db.createQuery("SELECT meta().id, title, completed FROM tasks WHERE completed = false ORDER BY title")
        let live = LiveResults(query, as: Todo.self)
        func settle(_ condition: () -> Bool) async throws {
            let deadline = Date().addingTimeInterval(5)
            while !condition(), Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        }
        try await settle { live.isLoaded }
        #expect(live.isLoaded && live.items.isEmpty)

        // Observation tracking fires when the items change.
        let changed = Collector<Bool>()
        withObservationTracking { _ = live.items } onChange: { changed.append(true) }
        let milk = Todo(title: "milk")
        try tasks.save(from: milk)
        try await settle { live.items.count == 1 }
        #expect(live.items.map(\.title) == ["milk"])
        #expect(live.items.first?.id == milk.id)
        #expect(changed.values == [true])

        // The decoded model remembers its revision, so editing it from the list is safe.
        var first = try #require(live.items.first)
        first.completed = true
        try tasks.save(from: first, concurrencyControl: .failOnConflict)
        try await settle { live.items.isEmpty }
        #expect(live.items.isEmpty && live.error == nil)

        // A row that does not decode is reported, and the last good items stay.
        try tasks.save(from: Todo(title: "bread"))
        try await settle { live.items.count == 1 }
        try tasks.save(MutableDocument(id: "broken", data: ["title": 7, "completed": false]))
        try await settle { live.error != nil }
        #expect("\(live.error.map { "\($0)" } ?? "")".contains("document 'broken' at title"))
        #expect(live.items.map(\.title) == ["bread"])

        live.stop()
        #expect(try await Self.listenersGone(db))
        try tasks.purge(id: "broken")
        try await Task.sleep(for: .milliseconds(100))
        #expect(live.error != nil)
    }
}
