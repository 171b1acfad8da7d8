import SyncNodeStore

/// Who a request is: a user signed in by password or cookie, a peer signed in
/// by certificate (`peer:<uuid>`, role `peer`), or anyone on an anonymous node.
struct Principal: Sendable, Equatable {
    let name: String?
    let roles: [String]
    /// What a peer signed in by certificate may reach; nil for everyone else.
    var scope: PeerScope?

    init(name: String?, roles: [String], scope: PeerScope? = nil) {
        self.name = name
        self.roles = roles
        self.scope = scope
    }

    /// Server admins may do everything on every database. A peer never is one.
    var isServerAdmin: Bool { scope == nil && roles.contains("_admin") }

    /// A peer signed in by its certificate.
    var isPeer: Bool { scope != nil }

    /// Everyone on a node that serves without authentication.
    static let anonymousNode = Principal(name: nil, roles: ["_admin"])

    var description: String { name ?? "anonymous" }
}

/// What a principal may do with one database.
enum DatabaseAccess: Int, Comparable, Sendable {
    case none, reader, writer, admin

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// A database's `_security` object, in CouchDB's shape: `admins` and `members`,
/// each with `names` and `roles`, plus `readers` (same shape), members who may
/// read but not write. As in CouchDB, a database with no members (and here no
/// readers) is open to every signed-in principal; once either lists someone,
/// only they (and admins) get in.
struct DatabaseSecurity: Sendable, Equatable {
    struct Group: Sendable, Equatable {
        var names: [String] = []
        var roles: [String] = []

        var isEmpty: Bool { names.isEmpty && roles.isEmpty }

        func contains(_ principal: Principal) -> Bool {
            principal.name.map(names.contains) == true || principal.roles.contains(where: roles.contains)
        }
    }

    var admins = Group()
    var members = Group()
    var readers = Group()

    /// Open to every signed-in principal (and so advertised on the LAN).
    var isOpen: Bool { members.isEmpty && readers.isEmpty }

    func access(of principal: Principal) -> DatabaseAccess {
        if principal.isServerAdmin { return .admin }
        // A peer's scope caps what `_security` grants: reading or writing, never administering.
        if let scope = principal.scope {
            let granted = admins.contains(principal) || isOpen || members.contains(principal) ? DatabaseAccess.writer
                : readers.contains(principal) ? .reader : .none
            return scope.access == .read ? min(granted, .reader) : granted
        }
        if admins.contains(principal) { return .admin }
        if isOpen || members.contains(principal) { return .writer }
        return readers.contains(principal) ? .reader : .none
    }

    private static let key = "security"

    /// The object stored with `database`; open when none was set.
    static func of(_ database: Database) throws -> DatabaseSecurity {
        guard let text = try database.metadata(key) else { return DatabaseSecurity() }
        return try DatabaseSecurity(json: try DocumentValue(json: text))
    }

    func save(to database: Database) throws {
        try database.setMetadata(Self.key, json.toJSON())
    }

    /// Parses a `_security` body; 400 `bad_request` for any other shape.
    init(json: DocumentValue) throws {
        guard case .dictionary(let object) = json else { throw CouchError.badRequest("the security object must be a JSON object") }
        for key in object.keys where !["admins", "members", "readers"].contains(key) {
            throw CouchError.badRequest("unknown security field '\(key)': expected admins, members and readers")
        }
        admins = try Self.group(object["admins"], "admins")
        members = try Self.group(object["members"], "members")
        readers = try Self.group(object["readers"], "readers")
    }

    init() {}

    var json: DocumentValue {
        func group(_ g: Group) -> DocumentValue { ["names": .array(g.names.map { .string($0) }), "roles": .array(g.roles.map { .string($0) })] }
        return ["admins": group(admins), "members": group(members), "readers": group(readers)]
    }

    private static func group(_ value: DocumentValue?, _ field: String) throws -> Group {
        guard let value else { return Group() }
        guard case .dictionary(let object) = value else { throw CouchError.badRequest("'\(field)' must be an object with names and roles") }
        func strings(_ key: String) throws -> [String] {
            guard let list = object[key] else { return [] }
            guard case .array(let items) = list else { throw CouchError.badRequest("'\(field).\(key)' must be an array of strings") }
            return try items.map {
                guard case .string(let s) = $0 else { throw CouchError.badRequest("'\(field).\(key)' must be an array of strings") }
                return s
            }
        }
        return Group(names: try strings("names"), roles: try strings("roles"))
    }
}
