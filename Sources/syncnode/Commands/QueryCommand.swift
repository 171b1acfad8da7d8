import ArgumentParser
import SyncNodeStore

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run a SQL++ SELECT; print one JSON line per result.",
        discussion: "In FROM, `_`, `_default` and the database's name mean its default collection; `name` is a collection of the default scope, `scope.name` one of another scope.\n\nExample:\n  syncnode query --db app \"SELECT title FROM work.tasks WHERE done = $done\" --param done=false")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Option(help: "The database to query.") var db: String = "default"
    @Argument(help: "The SQL++ query, e.g. \"SELECT name FROM _ WHERE age > $min\".") var sql: String
    @Option(name: .customLong("param"), help: "A parameter as NAME=JSON (repeatable), e.g. --param min=21.")
    var parameters: [String] = []

    func run() throws {
        var values: [String: DocumentValue] = [:]
        for parameter in parameters {
            guard let equals = parameter.firstIndex(of: "="), equals != parameter.startIndex else {
                throw CLIError.user("--param '\(parameter)' is not NAME=JSON")
            }
            let name = String(parameter[..<equals])
            do {
                values[String(name)] = try DocumentValue(json: String(parameter[parameter.index(after: equals)...]))
            } catch {
                throw CLIError.user("--param \(name): the value is not JSON (quote strings: --param \(name)='\"text\"')")
            }
        }
        let database = try node.open(database: db, create: false)
        defer { try? database.close() }
        let query = try database.createQuery(sql)
        query.parameters = Parameters(values)
        for result in try query.execute() { print(result.toJSON()) }
    }
}
