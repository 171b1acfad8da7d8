#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Dispatch
import Foundation
import Testing
import SyncNodeCombine
@testable import SyncNodeStore

/// Query, collection and document publishers: one event per commit that
/// matters, in commit order, on the queue given; cancelling removes the listener.
final class StorePublisherTests {
    struct Todo: Codable, Equatable, Sendable {
        @DocumentID var id: String? = nil
        var title: String
        var completed = false
    }

    /// Values received, and whether each arrived on the expected queue.
    final class Inbox<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [T] = []
        private(set) var offQueue = 0
        let key = DispatchSpecificKey<Bool>()

        func receive(_ item: T, onQueue: Bool) {
            lock.withLock {
                items.append(item)
                if !onQueue { offQueue += 1 }
            }
        }
        var values: [T] { lock.withLock { items } }

        func wait(count: Int) async -> [T] {
            let deadline = Date().addingTimeInterval(5)
            while values.count < count, Date() < deadline { try? await Task.sleep(for: .milliseconds(5)) }
            return values
        }
    }

    let dir: URL
    let db: Database
    let tasks: DocumentCollection
    let other: DocumentCollection

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-publishers-\(UUID().uuidString)")
        db = try Database(name: "db", config: DatabaseConfiguration(directory: dir))
        tasks = try db.createCollection(name: "tasks")
        other = try db.createCollection(name: "other")
    }

    deinit {
        try? db.close()
        try? FileManager.default.removeItem(at: dir)
    }

    func queue<T>(for inbox: Inbox<T>) -> DispatchQueue {
        let queue = DispatchQueue(label: "test.publishers")
        queue.setSpecific(key: inbox.key, value: true)
        return queue
    }

    @Test func queryPublisherEmitsOncePerChangingCommitInOrder() async throws {
        let query = try db.createQuery("SELECT meta().id, title, completed FROM tasks WHERE completed = false ORDER BY title")
        let inbox = Inbox<[String]>()
        let queue = queue(for: inbox)
        let subscription = query.changePublisher(on: queue)
            .map { change -> [String] in
                // A failed query or decoding shows as a value no expectation matches.
                guard let results = change.results else { return ["error: \(String(describing: change.error))"] }
                do { return try results.data(as: Todo.self).map(\.title) } catch { return ["error: \(error)"] }
            }
            .sink { titles in inbox.receive(titles, onQueue: DispatchQueue.getSpecific(key: inbox.key) == true) }
        #expect(await inbox.wait(count: 1) == [[]])

        // Each commit is awaited before the next, so each one is a run of its own.
        try tasks.save(from: Todo(title: "b"))
        #expect(await inbox.wait(count: 2).last == ["b"])
        try db.inBatch {
            try tasks.save(from: Todo(title: "a"))
            try tasks.save(from: Todo(title: "c"))
        }
        #expect(await inbox.wait(count: 3).last == ["a", "b", "c"])
        // Commits that leave the results alone emit nothing: another collection,
        // and a document outside the WHERE clause.
        try other.save(from: Todo(title: "elsewhere"))
        try tasks.save(from: Todo(title: "done", completed: true))
        let a = try #require(try query.execute().data(as: Todo.self).first)
        var done = a
        done.completed = true
        try tasks.save(from: done)
        #expect(await inbox.wait(count: 4).last == ["b", "c"])
        // A marker commit: the next value must be its own, so no stray value came before it.
        try tasks.save(from: Todo(title: "d"))
        #expect(await inbox.wait(count: 5) == [[], ["b"], ["a", "b", "c"], ["b", "c"], ["b", "c", "d"]])
        #expect(inbox.offQueue == 0)

        subscription.cancel()
        #expect(db.notifier.listenerCount == 0 && query.live.count == 0)
        try tasks.save(from: Todo(title: "after"))
        queue.sync {}  // anything enqueued for the subscriber before now has run
        #expect(inbox.values.count == 5)
    }

    @Test func collectionAndDocumentPublishersFollowCommits() async throws {
        let batches = Inbox<[String]>()
        let queue = queue(for: batches)
        let documents = Inbox<String>()
        let collectionSubscription = tasks.changePublisher(on: queue)
            .sink { change in batches.receive(change.documentIDs, onQueue: DispatchQueue.getSpecific(key: batches.key) == true) }
        let documentSubscription = tasks.documentChangePublisher(for: "watched", on: queue)
            .sink { change in documents.receive(change.documentID, onQueue: DispatchQueue.getSpecific(key: batches.key) == true) }

        try tasks.save(MutableDocument(id: "one"))
        try db.inBatch {
            try tasks.save(MutableDocument(id: "two"))
            try tasks.save(MutableDocument(id: "watched"))
        }
        try other.save(MutableDocument(id: "watched"))
        try tasks.delete(id: "watched")
        try tasks.purge(id: "one")
        #expect(await batches.wait(count: 4) == [["one"], ["two", "watched"], ["watched"], ["one"]])
        #expect(await documents.wait(count: 2) == ["watched", "watched"])
        // Commits hand their changes to the queue as they end: once it is drained, nothing more comes.
        queue.sync {}
        #expect(batches.values.count == 4 && documents.values.count == 2)
        #expect(batches.offQueue == 0 && documents.offQueue == 0)

        collectionSubscription.cancel()
        documentSubscription.cancel()
        #expect(db.notifier.listenerCount == 0)
    }

    @MainActor
    @Test func defaultQueueIsMain() async throws {
        // (After dispatch_main, Linux runs the main queue on a pool thread: ask the queue, not the thread.)
        let mainKey = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: mainKey, value: true)
        let inbox = Inbox<String>()
        let collection = tasks
        let subscription = collection.changePublisher().sink { change in
            inbox.receive(change.documentIDs.joined(), onQueue: DispatchQueue.getSpecific(key: mainKey) == true)
        }
        let query = try db.createQuery("SELECT title FROM tasks")
        let queryInbox = Inbox<Int>()
        let querySubscription = query.changePublisher().sink { change in
            queryInbox.receive(change.results?.count ?? -1, onQueue: DispatchQueue.getSpecific(key: mainKey) == true)
        }
        #expect(await queryInbox.wait(count: 1) == [0])
        try collection.save(MutableDocument(id: "m", data: ["title": "m"]))
        #expect(await inbox.wait(count: 1) == ["m"])
        #expect(await queryInbox.wait(count: 2) == [0, 1])
        #expect(inbox.offQueue == 0 && queryInbox.offQueue == 0)
        subscription.cancel()
        querySubscription.cancel()
    }

    @Test func tenThousandSubscribeCancelCyclesLeakNoListener() throws {
        let query = try db.createQuery("SELECT title FROM tasks WHERE completed = false")
        let queue = DispatchQueue(label: "test.leak")
        for _ in 0..<10_000 {
            tasks.changePublisher(on: queue).sink { _ in }.cancel()
            tasks.documentChangePublisher(for: "x", on: queue).sink { _ in }.cancel()
            query.changePublisher(on: queue).sink { _ in }.cancel()
        }
        // Subscriptions that end by being released cancel too.
        for _ in 0..<100 {
            var subscriptions = Set<AnyCancellable>()
            query.changePublisher(on: queue).sink { _ in }.store(in: &subscriptions)
            tasks.changePublisher(on: queue).sink { _ in }.store(in: &subscriptions)
            #expect(db.notifier.listenerCount >= 2)
            subscriptions.removeAll()
        }
        queue.sync {}
        #expect(db.notifier.listenerCount == 0)
        #expect(query.live.count == 0)
    }

    /// Combine's semantics, which Linux gets from our `combineLatest` over OpenCombine.
    @Test func combineLatestPairsTheLatestValues() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        var pairs: [String] = []
        var finished = false
        let subscription = numbers.combineLatest(letters)
            .sink(receiveCompletion: { _ in finished = true }, receiveValue: { pairs.append("\($0)\($1)") })
        numbers.send(1)
        numbers.send(2)
        #expect(pairs.isEmpty)
        letters.send("a")
        numbers.send(3)
        letters.send("b")
        numbers.send(completion: .finished)
        letters.send("c")
        #expect(!finished)
        letters.send(completion: .finished)
        #expect(pairs == ["2a", "3a", "3b", "3c"] && finished)
        subscription.cancel()
    }
}
