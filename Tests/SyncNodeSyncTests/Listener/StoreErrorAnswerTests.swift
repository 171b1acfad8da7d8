import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a client is told when SQLite fails under a request: its condition, not a bare 500.
@Suite struct StoreErrorAnswerTests {
    @Test func sqliteConditionsHaveTheirOwnAnswers() {
        let full = CouchError(StoreError.sqlite(code: 13, message: "disk I/O"))
        #expect(full.status == 507 && full.error == "insufficient_storage" && full.reason.contains("the disk is full"))
        // SQLITE_BUSY_SNAPSHOT (517) is an extended BUSY code.
        #expect(CouchError(StoreError.sqlite(code: 517, message: "busy")).status == 503)
        #expect(CouchError(StoreError.sqlite(code: 6, message: "locked")).status == 503)
        let damaged = CouchError(StoreError.sqlite(code: 26, message: "file is not a database"))
        #expect(damaged.status == 500 && damaged.reason.contains("restore it from a backup"))
    }
}
