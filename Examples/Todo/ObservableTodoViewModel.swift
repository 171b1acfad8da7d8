import Observation
import SyncNodeStore

/// The to-do list view model, Observation variant: SwiftUI
/// views (or `withObservationTracking`) follow `todos` through ``LiveResults``.
@MainActor
@Observable
public final class ObservableTodoViewModel {
    /// The tasks, ordered by title.
    public var todos: [Todo] { live.items }
    /// Why the list could not be refreshed, if it could not.
    public var lastError: (any Error)? { live.error }

    private let live: LiveResults<Todo>
    @ObservationIgnored private let tasks: DocumentCollection

    public init(database: Database) throws {
        tasks = try TodoQuery.tasks(in: database)
        live = LiveResults(try database.createQuery(TodoQuery.sql), as: Todo.self)
    }

    public func addTask(title: String) throws {
        try tasks.save(from: Todo(title: title))
    }

    public func toggleCompletion(for todo: Todo) throws {
        var todo = todo
        todo.completed.toggle()
        try tasks.save(from: todo, concurrencyControl: .failOnConflict)
    }

    public func deleteTask(_ todo: Todo) throws {
        try tasks.delete(for: todo)
    }
}
