import SyncNodeStore

/// A to-do item: a Codable value whose `id` is its document ID.
///
/// (The guide calls it `Task`, which shadows Swift's own `Task`; hence `Todo`.)
public struct Todo: Codable, Identifiable, Equatable, Sendable {
    @DocumentID public var id: String? = nil
    public var title: String
    public var completed = false

    public init(title: String, completed: Bool = false) {
        self.title = title
        self.completed = completed
    }
}

/// The query both view models follow.
enum TodoQuery {
    static let sql = "SELECT meta().id, title, completed FROM tasks ORDER BY title, meta().id"

    static func tasks(in database: Database) throws -> DocumentCollection {
        try database.collection(name: "tasks") ?? database.createCollection(name: "tasks")
    }
}
