import Foundation
import Observation
import Testing
@testable import SyncNodeExamples
@testable import SyncNodeStore

/// The example apps' view models, driven as an app would drive them, on the main actor.
@MainActor
final class ExampleTests {
    let dir: URL
    let db: Database

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-examples-\(UUID().uuidString)")
        db = try Database(name: "app", config: DatabaseConfiguration(directory: dir))
    }

    deinit {
        try? db.close()
        try? FileManager.default.removeItem(at: dir)
    }

    /// Lets main-queue deliveries run until `condition` holds; a failure if it does not within 5 s.
    func settle(sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(5)
        while !condition(), Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        if !condition() { Issue.record("not settled within 5 s", sourceLocation: sourceLocation) }
    }

    @Test func combineTodoViewModel() async throws {
        let model = try TodoViewModel(database: db)
        try model.addTask(title: "milk")
        try model.addTask(title: "bread")
        try await settle { model.todos.count == 2 }
        #expect(model.todos.map(\.title) == ["bread", "milk"])
        #expect(model.todos.allSatisfy { $0.id != nil && !$0.completed })

        let bread = model.todos[0]
        try model.toggleCompletion(for: bread)
        #expect(model.todos[0].completed)  // at once, before the query confirms it
        try await settle { (try? self.db.collection(name: "tasks")?.document(id: bread.id!, as: Todo.self)?.completed) == true }
        try await Task.sleep(for: .milliseconds(50))
        #expect(model.todos[0].completed)

        try model.deleteTask(model.todos[1])
        try await settle { model.todos.count == 1 }
        #expect(model.todos.map(\.title) == ["bread"])
        #expect(model.lastError == nil)
    }

    @Test func observationTodoViewModel() async throws {
        let model = try ObservableTodoViewModel(database: db)
        try await settle { model.todos.isEmpty && model.lastError == nil }
        let changed = ChangeCounter()
        withObservationTracking { _ = model.todos } onChange: { changed.hit() }
        try model.addTask(title: "write tests")
        try await settle { model.todos.count == 1 }
        #expect(changed.count == 1)
        let todo = try #require(model.todos.first)
        try model.toggleCompletion(for: todo)
        try await settle { model.todos.first?.completed == true }
        // The list's copy was read at the previous revision only if the query has not caught up;
        // once it has, toggling again from it does not conflict.
        try model.toggleCompletion(for: try #require(model.todos.first))
        try await settle { model.todos.first?.completed == false }
        try model.deleteTask(try #require(model.todos.first))
        try await settle { model.todos.isEmpty }
        #expect(model.todos.isEmpty)
    }

    @Test func categorizedProductsJoinAndSwitchToLatest() async throws {
        let model = try MenuViewModel(database: db)
        let categories = try #require(try db.collection(name: "categories"))
        let products = try #require(try db.collection(name: "products"))
        try db.inBatch {
            try categories.save(from: Category(id: "entrees", name: "Main Courses and Entrees"))
            try categories.save(from: Category(id: "desserts", name: "Desserts", isOnSale: true))
            try products.save(from: Product(id: "chicken-sandwich", name: "Chicken Sandwich", detail: "grilled", categoryId: "entrees"))
            try products.save(from: Product(id: "pie", name: "Apple Pie", detail: "warm", categoryId: "desserts"))
            try products.save(from: Product(id: "cake", name: "Cake", detail: "chocolate", categoryId: "desserts"))
        }
        try await settle { model.menu.count == 2 && model.onSale.count == 1 }
        #expect(model.menu.map(\.category.name) == ["Desserts", "Main Courses and Entrees"])
        #expect(model.menu.map { $0.products.map(\.name) } == [["Apple Pie", "Cake"], ["Chicken Sandwich"]])
        #expect(model.onSale.map(\.category.id) == ["desserts"])
        #expect(model.onSale.first?.products.map(\.id) == ["pie", "cake"])

        // A product added to a category on sale shows up in both lists.
        try products.save(from: Product(id: "tart", name: "Tart", detail: "lemon", categoryId: "desserts"))
        try await settle { model.onSale.first?.products.count == 3 && model.menu.first?.products.count == 3 }
        #expect(model.onSale.first?.products.map(\.name) == ["Apple Pie", "Cake", "Tart"])

        // The set of categories on sale changes: the products query is replaced, not added to.
        let listeners = db.notifier.listenerCount
        var entrees = try #require(try categories.document(id: "entrees", as: Category.self))
        entrees.isOnSale = true
        try categories.save(from: entrees)
        try await settle { model.onSale.count == 2 }
        #expect(model.onSale.map(\.category.id) == ["desserts", "entrees"])
        #expect(model.onSale.last?.products.map(\.id) == ["chicken-sandwich"])
        var desserts = try #require(try categories.document(id: "desserts", as: Category.self))
        desserts.isOnSale = false
        try categories.save(from: desserts)
        try await settle { model.onSale.count == 1 }
        #expect(model.onSale.map(\.category.id) == ["entrees"])
        #expect(db.notifier.listenerCount == listeners)

        // Products of categories no longer on sale stay out of it.
        try products.save(from: Product(id: "sorbet", name: "Sorbet", detail: "mango", categoryId: "desserts"))
        try await settle { model.menu.first?.products.count == 4 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(model.onSale.flatMap(\.products).map(\.id) == ["chicken-sandwich"])
        #expect(model.lastError == nil)
    }
}

final class ChangeCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var hits = 0
    func hit() { lock.withLock { hits += 1 } }
    var count: Int { lock.withLock { hits } }
}
