import Foundation

/// The cluster `.ci/run` starts beside the reference peers: its member URLs, its directory (each
/// member's pid file) and the command that restarts a killed member.
public struct CouchCluster: Sendable {
    public let members: [URL]
    public let directory: String
    public let restart: String

    public static let configured: CouchCluster? = {
        let env = ProcessInfo.processInfo.environment
        let members = (env["SYNCNODE_COUCHDB_CLUSTER"] ?? "").split(separator: " ").compactMap { URL(string: String($0)) }
        guard members.count >= 2, let directory = env["SYNCNODE_COUCHDB_CLUSTER_DIR"], let restart = env["SYNCNODE_COUCHDB_CLUSTER_RESTART"] else { return nil }
        return CouchCluster(members: members, directory: directory, restart: restart)
    }()
}
