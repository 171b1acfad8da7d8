import Foundation
import GRDB

/// Remembers which database's write transaction the current thread is
/// running, and on which connection: reads made inside a batch use the writer
/// connection and see the batch's uncommitted writes, and writes nested in it
/// join it without another trip through GRDB's scheduling (once per document
/// of a batch, that trip was about a tenth of an update's time).
enum WriterThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private final class Mark {
        unowned let database: Database
        let connection: GRDB.Database
        init(_ database: Database, _ connection: GRDB.Database) {
            self.database = database
            self.connection = connection
        }
    }

    /// The writer connection when the current thread runs `database`'s write transaction.
    static func connection(for database: Database) -> GRDB.Database? {
        guard let raw = pthread_getspecific(key) else { return nil }
        let mark = Unmanaged<Mark>.fromOpaque(raw).takeUnretainedValue()
        return mark.database === database ? mark.connection : nil
    }

    static func isWriting(_ database: Database) -> Bool { connection(for: database) != nil }

    /// Runs `body` marked as writing `database` on `connection`, restoring the previous mark after.
    static func marking<T>(_ database: Database, on connection: GRDB.Database, _ body: () throws -> T) rethrows -> T {
        let mark = Mark(database, connection)
        let previous: UnsafeMutableRawPointer? = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(mark).toOpaque())
        defer {
            pthread_setspecific(key, previous)
            withExtendedLifetime(mark) {}
        }
        return try body()
    }
}
