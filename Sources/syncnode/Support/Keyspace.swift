import SyncNodeSync

extension Keyspace {
    /// The keyspace argument of a command; a usage error when malformed.
    static func parse(_ text: String) throws -> Keyspace {
        guard let keyspace = Keyspace(text) else { throw CLIError.usage("keyspace '\(text)' must be NAME or NAME.SCOPE.COLLECTION") }
        return keyspace
    }
}
