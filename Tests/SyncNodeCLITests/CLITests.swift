import Foundation
import SyncNodeTestSupport
import Testing
@testable import SyncNodeStore

/// The CLI with `arguments`, fed `stdin`: its exit status and output.
/// Runs `syncnode` to its end, off Swift's cooperative threads: a test blocked in a child's
/// read held one of the two this 2-core machine has (`wait --in-sync` for up to a minute), and
/// two at once stalled every other test of the run, and the in-process nodes their children ask.
func runCLI(_ arguments: [String], stdin: String? = nil, stdinFile: URL? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await ChildProcess.runDetached(try syncnodeExecutable(), arguments, stdin: stdin, stdinFile: stdinFile)
}

@Suite struct CLITests {
    /// A newcomer's first commands print help and succeed.
    @Test(arguments: [["--help"], [], ["help"], ["serve", "--help"], ["help", "sync"], ["sync", "-h"]])
    func helpIsPrinted(_ arguments: [String]) async throws {
        let (status, stdout, _) = try await runCLI(arguments)
        #expect(status == 0)
        #expect(stdout.contains("USAGE: syncnode"), "\(arguments): \(stdout.prefix(200))")
    }

    /// Every command's help shows an example.
    @Test(arguments: [[], ["put"], ["get"], ["delete"], ["import"], ["export"], ["changes"], ["conflicts"], ["resolve"], ["query"], ["serve"], ["sync"], ["peers"],
                      ["identity"], ["user"], ["user", "add"], ["user", "remove"], ["user", "list"], ["trust"], ["trust", "add"],
                      ["trust", "remove"], ["trust", "list"], ["info"], ["compact"], ["purge"], ["index"], ["index", "create"],
                      ["index", "list"], ["index", "drop"]])
    func helpShowsAnExample(_ command: [String]) async throws {
        let (status, stdout, _) = try await runCLI(command + ["--help"])
        #expect(status == 0)
        #expect(stdout.contains("USAGE: syncnode") && stdout.contains("Example"), "\(command): \(stdout.prefix(300))")
    }

    /// One fingerprint in 64 starts with "-": pasted as `syncnode identity` prints it, with
    /// options before or after it, `trust add` and `trust remove` still take it.
    @Test func aFingerprintThatStartsWithADashIsTakenAsIs() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        let fingerprint = "-ICa_01pvs552r41vgxwi4kNfq-4QfEhMwZnt30uJZA"
        let added = try await runCLI(d + ["trust", "add", fingerprint, "--note", "laptop"])
        #expect(added.status == 0, "\(added)")
        let listed = try await runCLI(d + ["trust", "list"])
        #expect(listed.stdout.contains(fingerprint) && listed.stdout.contains("laptop"), "\(listed)")
        let removed = try await runCLI(d + ["trust", "remove", fingerprint])
        #expect(removed.status == 0, "\(removed)")
        #expect(try await runCLI(d + ["trust", "list"]).stdout.isEmpty)
        // A dash-led word that is not a fingerprint is still read as options.
        let unknown = try await runCLI(d + ["trust", "add", "-ICa_01"])
        #expect(unknown.status == 2 && !unknown.stderr.isEmpty, "\(unknown)")
    }

    @Test func putGetDeleteExportChangesRoundTrip() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        let put = try await runCLI(d + ["put", "app.s.c", "doc1", #"{"b": 2, "a": [1, "x"]}"#])
        #expect(put.status == 0)
        let created = try DocumentValue(json: put.stdout)
        guard case .dictionary(let ids) = created, case .string(let rev)? = ids["rev"] else {
            Issue.record("put printed \(put.stdout)")
            return
        }
        #expect(rev.hasPrefix("1-"))
        let get = try await runCLI(d + ["get", "app.s.c", "doc1"])
        #expect(get.stdout == #"{"_id":"doc1","_rev":"\#(rev)","a":[1,"x"],"b":2}"# + "\n")
        // Update from stdin.
        #expect(try await runCLI(d + ["put", "app.s.c", "doc1", "-"], stdin: #"{"b": 3}"#).status == 0)
        let del = try await runCLI(d + ["delete", "app.s.c", "doc1"])
        #expect(del.status == 0 && del.stdout.contains(#""rev":"3-"#))
        let changes = try await runCLI(d + ["changes", "app.s.c"])
        #expect(changes.stdout.split(separator: "\n").count == 1)
        #expect(changes.stdout.contains(#""deleted":true"#))
        #expect(try await runCLI(d + ["changes", "app.s.c", "--since", "3"]).stdout.isEmpty)
    }

    /// `info`, `index`, `purge` and `compact` as an operator uses them, each checked against what the store then holds.
    @Test func adminCommandsDescribeAndMaintainTheNode() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        for (id, body) in [("a", #"{"city": "Oslo", "n": 1}"#), ("b", #"{"city": "Rome", "n": 2}"#), ("c", #"{"n": 3}"#)] {
            #expect(try await runCLI(d + ["put", "app", id, body]).status == 0)
        }
        #expect(try await runCLI(d + ["put", "app.s.c", "z", "{}"]).status == 0)

        let created = try await runCLI(d + ["index", "create", "app", "by-city", "--value", "city", "--value", "n"])
        #expect(created.status == 0 && created.stdout == #"{"created":true,"index":"by-city"}"# + "\n", "\(created)")
        #expect(try await runCLI(d + ["index", "create", "app", "by-city", "--value", "city", "--value", "n"]).stdout.contains(#""created":false"#))
        #expect(try await runCLI(d + ["index", "create", "app", "by-city", "--value", "n"]).status == 1, "same name, another definition")
        #expect(try await runCLI(d + ["index", "create", "app", "text", "--full-text", "city"]).status == 0)
        #expect(try await runCLI(d + ["index", "create", "app", "both", "--value", "n", "--full-text", "city"]).status == 2)
        #expect(try await runCLI(d + ["index", "create", "app", "oslo", "--selector", #"{"city":"Oslo"}"#]).status == 0)
        #expect(try await runCLI(d + ["index", "create", "app", "bad", "--selector", "[1]"]).status == 2)
        let unindexable = try await runCLI(d + ["index", "create", "app", "bad", "--selector", #"{"tags":{"$elemMatch":{"$eq":"a"}}}"#])
        #expect(unindexable.status == 1 && unindexable.stderr.contains("cannot be indexed"), "\(unindexable)")
        let listed = try await runCLI(d + ["index", "list", "app"])
        #expect(listed.stdout == """
            {"definition":{"value":["city","n"]},"index":"by-city"}
            {"definition":{"selector":{"city":"Oslo"}},"index":"oslo"}
            {"definition":{"full_text":["city"],"ignore_accents":false,"language":"en"},"index":"text"}

            """, "\(listed)")

        let purged = try await runCLI(d + ["purge", "app", "c", "nope"])
        #expect(purged.status == 1 && purged.stdout == #"{"id":"c","purged":true}"# + "\n" + #"{"id":"nope","purged":false}"# + "\n", "\(purged)")
        #expect(purged.stderr.contains("1 of 2 IDs named no document"))
        #expect(try await runCLI(d + ["get", "app", "c"]).status == 1)

        let info = try await runCLI(d + ["info"]).stdout.split(separator: "\n").map { try DocumentValue(json: String($0)) }
        #expect(info.count == 2, "the node, then database app")
        #expect(info.first?["fingerprint"] == .null, "info makes no identity")
        let app = try #require(info.last)
        #expect(app["database"] == .string("app") && app["revs_limit"] == .int(20))
        guard case .int(let bytes)? = app["file_bytes"], case .array(let collections)? = app["collections"] else {
            Issue.record("info printed \(app)")
            return
        }
        #expect(bytes > 0)
        #expect(collections.map { $0["collection"] } == [.string("_default._default"), .string("s.c")])
        #expect(collections.first?["documents"] == .int(2) && collections.last?["documents"] == .int(1))
        if case .array(let indexes)? = collections.first?["indexes"] { #expect(indexes.count == 3) } else { Issue.record("no indexes in \(app)") }

        #expect(try await runCLI(d + ["index", "drop", "app", "text"]).stdout.contains(#""dropped":true"#))
        #expect(try await runCLI(d + ["index", "drop", "app", "text"]).status == 1)
        let compacted = try await runCLI(d + ["compact"])
        #expect(compacted.status == 0 && compacted.stdout.contains(#""database":"app""#), "\(compacted)")
        #expect(try await runCLI(d + ["compact", "nope"]).status == 1)
        #expect(try await runCLI(d + ["get", "app", "a"]).stdout.contains("Oslo"), "compaction keeps live documents")
    }

    @Test func queryPrintsJSONLines() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        for (id, body) in [("a", #"{"n": 1, "tag": "x"}"#), ("b", #"{"n": 2}"#), ("c", #"{"n": 3, "tag": "x"}"#)] {
            #expect(try await runCLI(d + ["put", "app", id, body]).status == 0)
        }
        #expect(try await runCLI(d + ["put", "app.s.c", "z", #"{"n": 9}"#]).status == 0)
        let q = try await runCLI(d + ["query", "--db", "app", "SELECT meta().id, n, tag FROM app WHERE n >= $min ORDER BY n", "--param", "min=2"])
        #expect(q.status == 0)
        #expect(q.stdout.split(separator: "\n") == [#"{"id":"b","n":2}"#, #"{"id":"c","n":3,"tag":"x"}"#])
        let scoped = try await runCLI(d + ["query", "--db", "app", "SELECT COUNT(*) AS k FROM s.c"])
        #expect(scoped.stdout == "{\"k\":1}\n")
        let bad = try await runCLI(d + ["query", "--db", "app", "SELECT n FROM _ WHERE"])
        #expect(bad.status == 1 && bad.stderr.contains("expected an expression") && bad.stderr.split(separator: "\n").count == 1)
        #expect(try await runCLI(d + ["query", "--db", "nosuch", "SELECT 1 FROM _"]).status == 1)
        #expect(try await runCLI(d + ["query", "--db", "app", "SELECT 1 FROM _", "--param", "x"]).status == 1)
    }

    @Test func importExportRoundTrip() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        let input = (0..<2500).map { #"{"_id":"k\#($0)","v":\#($0)}"# }.joined(separator: "\n")
        let imported = try await runCLI(d + ["import", "db", "-"], stdin: input)
        #expect(imported.status == 0)
        #expect(imported.stdout.hasPrefix(#"{"imported":2500,"seconds":"#))
        let exported = try await runCLI(d + ["export", "db"])
        let lines = exported.stdout.split(separator: "\n")
        #expect(lines.count == 2500)
        #expect(lines.first?.hasPrefix(#"{"_id":"k0","_rev":"1-"#) == true)
        // Export output imports again (the _rev is ignored: new revisions on top).
        let other = try await runCLI(d + ["import", "db2", "-"], stdin: exported.stdout)
        #expect(other.status == 0)
        #expect(try await runCLI(d + ["export", "db2"]).stdout.split(separator: "\n").count == 2500)
    }

    /// Conflicts made as replication makes them, listed and resolved from the command line.
    @Test func conflictsAreListedAndResolved() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        #expect(try await runCLI(d + ["put", "default", "plain", "{}"]).status == 0)
        do {
            let db = try Database(name: "default", config: DatabaseConfiguration(directory: dir.url))
            defer { try? db.close() }
            let c = try db.defaultCollection()
            for id in ["d", "e"] {
                try c.insertRevision(id: id, history: ["1-1111"], deleted: false, body: ["v": "root"])
                try c.insertRevision(id: id, history: ["2-bbbb", "1-1111"], deleted: false, body: ["v": "b"])
                try c.insertRevision(id: id, history: ["2-cccc", "1-1111"], deleted: false, body: ["v": "c"])
            }
        }
        let listed = try await runCLI(d + ["conflicts", "default"])
        #expect(listed.status == 0)
        #expect(listed.stdout.split(separator: "\n") == [
            #"{"conflicts":["2-bbbb"],"id":"d","winner":"2-cccc"}"#, #"{"conflicts":["2-bbbb"],"id":"e","winner":"2-cccc"}"#,
        ])
        let kept = try await runCLI(d + ["resolve", "default", "d", "--keep", "2-bbbb"])
        #expect(kept.status == 0 && kept.stdout == #"{"id":"d","rev":"2-bbbb"}"# + "\n", "\(kept.stderr)")
        #expect(try await runCLI(d + ["get", "default", "d"]).stdout.contains(#""v":"b""#))
        let merged = try await runCLI(d + ["resolve", "default", "e", "--merged", "-"], stdin: #"{"v":"b+c"}"#)
        #expect(merged.status == 0 && merged.stdout.contains(#""rev":"3-"#), "\(merged.stderr)")
        #expect(try await runCLI(d + ["get", "default", "e"]).stdout.contains(#""v":"b+c""#))
        #expect(try await runCLI(d + ["conflicts", "default"]).stdout.isEmpty)
        // Wrong requests: one line each, nothing changed.
        for (args, status, message) in [
            (["resolve", "default", "d", "--keep", "2-ffff"], Int32(1), "not a live leaf"),
            (["resolve", "default", "d"], 2, "exactly one of"),
            (["resolve", "default", "d", "--keep", "2-bbbb", "--merged", "{}"], 2, "exactly one of"),
            (["resolve", "default", "missing", "--keep", "1-1111"], 1, "not found"),
        ] {
            let r = try await runCLI(d + args)
            #expect(r.status == status && r.stderr.contains(message) && r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
    }

    @Test func badInputGetsOneLineAndExitCodes() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        let noUsers = dir.url.appendingPathComponent("users.json")
        #expect(FileManager.default.createFile(atPath: noUsers.path, contents: Data("{}".utf8)))
        let cases: [([String], String?, Int32, String)] = [
            (d + ["serve", "--users", noUsers.path, "--no-advertise", "--no-browse"], nil, 1, "names no user"),
            (d + ["put", "db", "x", "{not json"], nil, 1, "invalid JSON"),
            (d + ["put", "db", "x", #"{"_secret":1}"#], nil, 1, "reserved"),
            (d + ["put", "db", "_design/x", "{}"], nil, 1, "invalid document ID"),
            (d + ["put", "bad/name", "x", "{}"], nil, 1, "invalid name"),
            (d + ["put", "a.b", "x", "{}"], nil, 2, "keyspace"),
            (d + ["get", "db", "missing"], nil, 1, "no document"),
            (d + ["get", "nodb", "missing"], nil, 1, "no database"),
            (d + ["import", "db", "-"], "{\"v\":1}\n{oops\n", 1, "line 2"),
            (d + ["import", "db", "/nonexistent/file"], nil, 1, "cannot read /nonexistent/file: No such file"),
            (d + ["frobnicate"], nil, 2, "Unexpected argument"),
            (d + ["get", "db"], nil, 2, "Missing expected argument"),
        ]
        for (args, stdin, status, message) in cases {
            let r = try await runCLI(args, stdin: stdin)
            #expect(r.status == status, "\(args): exit \(r.status), stderr \(r.stderr)")
            #expect(r.stderr.contains(message), "\(args): stderr \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): stderr \(r.stderr)")
        }
        // The failed import committed nothing of its batch.
        #expect(try await runCLI(d + ["export", "db"]).stdout.isEmpty)
    }

    /// Input that cannot be read (a folder as stdin, or as the file) is a one-line error. `put`
    /// and `resolve` with `-` stopped the process with a Foundation crash dump instead.
    @Test func unreadableInputIsAnError() async throws {
        let dir = try TempDirectory()
        let d = ["--dir", dir.url.path]
        #expect(try await runCLI(d + ["put", "db", "x", "{}"]).status == 0)
        for args in [["put", "db", "y", "-"], ["resolve", "db", "x", "--merged", "-"], ["import", "db", "-"], ["import", "db", dir.url.path]] {
            let r = try await runCLI(d + args, stdinFile: dir.url)
            #expect(r.status == 1, "\(args): exit \(r.status), stderr \(r.stderr.prefix(300))")
            #expect(r.stderr.contains("cannot read") && r.stderr.contains("Is a directory"), "\(args): \(r.stderr.prefix(300))")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr.prefix(300))")
        }
        #expect(try await runCLI(d + ["export", "db"]).stdout.split(separator: "\n").count == 1)
    }
}
