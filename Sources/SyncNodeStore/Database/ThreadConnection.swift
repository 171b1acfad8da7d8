import Foundation
import GRDB

/// Remembers which database's transaction the current thread is running, on
/// which connection, and whether it writes. Reads made inside a batch use the
/// writer connection and see the batch's uncommitted writes; writes nested in
/// a batch, and reads nested in a read, join their transaction's connection
/// without another trip through GRDB's scheduling. Once per document (a
/// batch's saves, a `_bulk_get`'s reads) that trip was about a tenth of the
/// time.
enum ThreadConnection {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private final class Mark {
        unowned let database: Database
        let connection: GRDB.Database
        let writing: Bool
        init(_ database: Database, _ connection: GRDB.Database, writing: Bool) {
            self.database = database
            self.connection = connection
            self.writing = writing
        }
    }

    private static var current: Mark? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Mark>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The writer connection when the current thread runs `database`'s write transaction.
    static func writer(for database: Database) -> GRDB.Database? {
        guard let mark = current, mark.database === database, mark.writing else { return nil }
        return mark.connection
    }

    /// The connection of `database`'s transaction the current thread runs, a write's or a read's.
    static func any(for database: Database) -> GRDB.Database? {
        guard let mark = current, mark.database === database else { return nil }
        return mark.connection
    }

    static func isWriting(_ database: Database) -> Bool { writer(for: database) != nil }

    /// Runs `body` marked as running `database`'s transaction on `connection`, restoring the
    /// previous mark after.
    static func marking<T>(_ database: Database, on connection: GRDB.Database, writing: Bool, _ body: () throws -> T) rethrows -> T {
        let mark = Mark(database, connection, writing: writing)
        let previous: UnsafeMutableRawPointer? = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(mark).toOpaque())
        defer {
            pthread_setspecific(key, previous)
            withExtendedLifetime(mark) {}
        }
        return try body()
    }
}
