import SyncNodeStore

/// `NAME` (the default collection of database NAME) or `NAME.SCOPE.COLLECTION`.
struct Keyspace: CustomStringConvertible {
    let database: String
    let scope: String
    let collection: String

    init(_ text: String) throws {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: (database, scope, collection) = (parts[0], "_default", "_default")
        case 3: (database, scope, collection) = (parts[0], parts[1], parts[2])
        default: throw CLIError.usage("keyspace '\(text)' must be NAME or NAME.SCOPE.COLLECTION")
        }
    }

    var description: String { "\(database).\(scope).\(collection)" }
}
