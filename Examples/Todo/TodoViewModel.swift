#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import SyncNodeStore
import SyncNodeCombine

/// The to-do list view model, Combine variant: a live query
/// publisher decoded into `todos`, and the edits a list view makes.
@MainActor
public final class TodoViewModel: ObservableObject {
    /// The tasks, ordered by title; follows every commit that changes them.
    @Published public private(set) var todos: [Todo] = []
    /// Why the list could not be refreshed, if it could not.
    @Published public private(set) var lastError: (any Error)?

    private let tasks: DocumentCollection
    private var subscriptions = Set<AnyCancellable>()

    public init(database: Database) throws {
        tasks = try TodoQuery.tasks(in: database)
        try database.createQuery(TodoQuery.sql)
            .changePublisher()
            .sink { [weak self] change in self?.apply(change) }
            .store(in: &subscriptions)
    }

    private func apply(_ change: QueryChange) {
        do {
            if let error = change.error { throw error }
            todos = try change.results?.data(as: Todo.self) ?? []
            lastError = nil
        } catch {
            lastError = error
        }
    }

    public func addTask(title: String) throws {
        try tasks.save(from: Todo(title: title))
    }

    /// Flips the task at once in the list (the UI reacts now), then saves it;
    /// the live query confirms it a moment later, and a failed save flips it back.
    public func toggleCompletion(for todo: Todo) throws {
        guard let index = todos.firstIndex(where: { $0.id == todo.id }) else { return }
        todos[index].completed.toggle()
        do {
            try tasks.save(from: todos[index])
        } catch {
            todos[index].completed.toggle()
            throw error
        }
    }

    public func deleteTask(_ todo: Todo) throws {
        try tasks.delete(for: todo)
    }
}
