import SyncNodeStore

extension Route {
    /// Who may call a route's method.
    enum Access: Sendable, Equatable {
        /// Anyone, before sign-in: the dashboard's files, logging in, redeeming an invitation.
        case open
        /// Anyone signed in (everyone, on a node without passwords).
        case signedIn
        /// Whoever the database's `_security` grants at least this.
        case database(DatabaseAccess)
        /// Server admins only.
        case serverAdmin

        static let reader = Access.database(.reader)
        static let writer = Access.database(.writer)
        static let databaseAdmin = Access.database(.admin)
    }
}

extension Handlers {
    /// What `principal` may do with database `name` (a missing database is open, as a new one would be).
    func access(of principal: Principal, to name: String) throws -> DatabaseAccess {
        if principal.isServerAdmin { return .admin }
        if let scope = principal.scope, !scope.allows(database: name) { return .none }
        guard isServed(name), let db = try directory.database(name) else { return DatabaseSecurity().access(of: principal) }
        return try DatabaseSecurity.of(db).access(of: principal)
    }

    /// Throws 403 `forbidden` unless `principal` has `access`; `keyspace`: the one the path
    /// names, which a paired peer's scope must allow.
    func authorize(_ access: Route.Access, keyspace: Keyspace?, principal: Principal) throws {
        if let keyspace, let scope = principal.scope, !scope.allows(keyspace) {
            throw CouchError.forbidden("\(principal.description) may reach \(scope), not '\(keyspace.name)'.")
        }
        switch access {
        case .open, .signedIn:
            return
        case .serverAdmin:
            guard principal.isServerAdmin else {
                throw CouchError.forbidden("This is for server admins; \(principal.description) is not one.")
            }
        case .database(let needed):
            guard let database = keyspace?.database else { return }
            let granted = try self.access(of: principal, to: database)
            guard granted < needed else { return }
            switch granted {
            case .none: throw CouchError.forbidden("You are not allowed to access this db: \(principal.description) is not a member of '\(database)'.")
            case .reader where principal.scope?.access == .read: throw CouchError.forbidden("\(principal.description) may read '\(database)' but not write it (its scope is \(principal.scope?.description ?? "")).")
            case .reader: throw CouchError.forbidden("\(principal.description) may read '\(database)' but not write it (a reader in its _security).")
            case .writer, .admin: throw CouchError.forbidden("Only admins of '\(database)' may do this; \(principal.description) is not one.")
            }
        }
    }

    /// Whether the asker of an answer that outlives its request (`current`: its sign-in as it
    /// would be now) may still have `needed` access to `keyspace`. Nil `current`: no sign-in to lose.
    func stillAllowed(_ current: (@Sendable () -> Principal?)?, keyspace: Keyspace, needed: DatabaseAccess = .reader) -> Bool {
        guard let current else { return true }
        guard let principal = current() else { return false }
        if let scope = principal.scope, !scope.allows(keyspace) { return false }
        return ((try? access(of: principal, to: keyspace.database)) ?? DatabaseAccess.none) >= needed
    }
}
