import Foundation
@_exported import SyncNodeTestSupport
@testable import SyncNodeStore

extension TempDirectory {
    func open(_ name: String = "db", revsLimit: Int = 20) throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: url, revsLimit: revsLimit))
    }
}

/// A database in a temporary directory with one collection; suites subclass
/// it (one fresh instance per test) and it closes the database.
class CollectionFixture {
    let dir: TempDirectory
    let db: Database
    let collection: DocumentCollection

    init(collection name: String, scope: String? = nil) throws {
        dir = try TempDirectory()
        db = try dir.open()
        collection = try db.createCollection(name: name, scope: scope)
    }

    deinit { try? db.close() }
}

/// The fixture with a `tasks` collection.
class TasksFixture: CollectionFixture {
    var tasks: DocumentCollection { collection }

    init() throws { try super.init(collection: "tasks") }
}
