import Foundation
import Logging

/// Where a database lives and how it keeps history.
public struct DatabaseConfiguration: Sendable {
    /// The directory holding `<name>.syncnode/` database directories.
    public var directory: URL
    /// How many generations of history each document keeps (CouchDB's `_revs_limit`).
    public var revsLimit: Int
    /// The logger the store writes to.
    public var logger: Logger

    /// - parameters:
    ///   - directory: defaults to the current working directory.
    ///   - revsLimit: generations of history kept per document.
    ///   - logger: the store's logger.
    public init(directory: URL? = nil, revsLimit: Int = 20, logger: Logger = Logger(label: "syncnode.store")) {
        self.directory = directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        self.revsLimit = max(1, revsLimit)
        self.logger = logger
    }
}
