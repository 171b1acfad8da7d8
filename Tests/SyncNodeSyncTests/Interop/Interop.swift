import Foundation
import Testing

/// The one skip rule of the interoperability suites: each runs when what it talks to is here,
/// and otherwise is skipped with the reason and what to do. `.ci/run` provides all of them
/// (a CouchDB from the reference peers, the PouchDB bundles, and the `.venv` that
/// `scripts/setup.sh --tests` makes), so CI skips none.
enum Interop {
    /// A CouchDB admin's URL in `SYNCNODE_COUCHDB_URL`.
    static var couchDB: ConditionTrait {
        .enabled(if: CouchDB.configured, "SYNCNODE_COUCHDB_URL is not set: CouchDB interoperability not tested (.ci/run starts a CouchDB)")
    }

    /// The PouchDB bundles in `SYNCNODE_POUCHDB_DIR`.
    static var pouchDB: ConditionTrait {
        .enabled(if: PouchDB.directory != nil, "SYNCNODE_POUCHDB_DIR is not set: PouchDB interoperability not tested")
    }

    /// The independent Python clients (CouchDB clients, zeroconf, Playwright) in `.venv`.
    static var pythonClients: ConditionTrait {
        .enabled(if: FileManager.default.isExecutableFile(atPath: python.path),
                 ".venv/bin/python is missing: the Python clients are not installed (scripts/setup.sh --tests installs them)")
    }

    /// The `.venv`'s Python.
    static var python: URL { packageRoot.appendingPathComponent(".venv/bin/python") }
}
