import ArgumentParser
import SyncNodeSync

/// A command's KEYSPACE argument: `NAME` (a database's default collection) or
/// `NAME.SCOPE.COLLECTION`. Anything else is a usage error (exit 2) before the command runs.
extension Keyspace: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }

    /// As it is typed: `default`, not `default._default._default`.
    public var defaultValueDescription: String { name }
}
