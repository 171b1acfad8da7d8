import Foundation

/// Remembers which database's write transaction the current thread is
/// running, so that reads made inside a batch use the writer connection and
/// see the batch's uncommitted writes.
enum WriterThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func isWriting(_ database: Database) -> Bool {
        let current: UnsafeMutableRawPointer? = pthread_getspecific(key)
        return current == Unmanaged.passUnretained(database).toOpaque()
    }

    /// Runs `body` marked as writing `database`, restoring the previous mark after.
    static func marking<T>(_ database: Database, _ body: () throws -> T) rethrows -> T {
        let previous: UnsafeMutableRawPointer? = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(database).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
