import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Create, list and drop a collection's value, full-text and selector indexes.",
        discussion: "Example:\n  syncnode index create default by-city --value address.city --value name\n  syncnode index create default text --full-text title --full-text body\n  syncnode index create default store-s7 --selector '{\"store\": \"s7\"}'\n  syncnode index list default",
        subcommands: [Create.self, List.self, Drop.self])

    /// A definition as JSON: `{"value": [expr]}` or `{"full_text": [path], "ignore_accents", "language"}`.
    static func describe(_ definition: IndexDefinition) -> DocumentValue {
        switch definition {
        case .value(let expressions):
            return ["value": .array(expressions.map { .string($0) })]
        case .fullText(let properties, let ignoreAccents, let language):
            return ["full_text": .array(properties.map { .string($0) }), "ignore_accents": .bool(ignoreAccents), "language": language.map { .string($0) } ?? .null]
        case .selector(let json):
            return ["selector": (try? DocumentValue(json: json)) ?? .string(json)]
        }
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an index (nothing happens when it exists with the same definition); prints {\"index\",\"created\"}.",
            discussion: "Value indexes take SQL++ expressions, most significant first; full-text indexes take property paths, searched with MATCH(index, 'words'); a selector index takes a Mango selector, and serves changes feeds filtered by that selector (selective sync) from the documents it matches alone.\n\nExample:\n  syncnode index create default by-city --value address.city\n  syncnode index create default store-s7 --selector '{\"store\": \"s7\"}'")

        @ParentCommand var syncnode: SyncNodeCommand
        @OptionGroup var target: IndexTarget
        @Option(name: .customLong("value"), help: "A SQL++ expression to index (repeatable): a value index.") var expressions: [String] = []
        @Option(name: .customLong("full-text"), help: "A property path to index for full-text search (repeatable).") var properties: [String] = []
        @Option(help: ArgumentHelp("A Mango selector: a selector index, for changes feeds filtered by it.", valueName: "json")) var selector: String?
        @Flag(help: "Full-text: match letters with or without accents.") var ignoreAccents = false
        @Option(help: "Full-text: the language (en stems English words; any other indexes words as they are).") var language = "en"

        func validate() throws {
            let kinds = [!expressions.isEmpty, !properties.isEmpty, selector != nil].filter { $0 }.count
            if kinds != 1 { throw ValidationError("give one of --value expressions, --full-text properties or --selector JSON") }
            if let selector, JSONArgument.selector(selector) == nil {
                throw ValidationError("--selector must be a JSON object, a Mango selector such as '{\"store\":\"s7\"}'")
            }
        }

        func run() throws {
            try syncnode.node.withCollection(target.keyspace, create: true) { _, collection in
                let name = target.name
                let existed = try collection.indexes.contains(name)
                if let selector = selector.flatMap(JSONArgument.selector) {
                    try collection.createIndex(SelectorIndexConfiguration(selector), name: name)
                } else if expressions.isEmpty {
                    try collection.createIndex(FullTextIndexConfiguration(properties, ignoreAccents: ignoreAccents, language: language), name: name)
                } else {
                    try collection.createIndex(ValueIndexConfiguration(expressions), name: name)
                }
                Output.line(["index": .string(name), "created": .bool(!existed)])
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a collection's indexes as JSON lines {\"index\",\"definition\"}.",
            discussion: "Example:\n  syncnode index list default")

        @ParentCommand var syncnode: SyncNodeCommand
        @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace

        func run() throws {
            try syncnode.node.withCollection(keyspace, create: false) { _, collection in
                for (name, definition) in try collection.indexDefinitions {
                    Output.line(["index": .string(name), "definition": IndexCommand.describe(definition)])
                }
            }
        }
    }

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop an index; prints {\"index\",\"dropped\"}.",
            discussion: "Example:\n  syncnode index drop default by-city")

        @ParentCommand var syncnode: SyncNodeCommand
        @OptionGroup var target: IndexTarget

        func run() throws {
            try syncnode.node.withCollection(target.keyspace, create: false) { _, collection in
                try collection.deleteIndex(name: target.name)
                Output.line(["index": .string(target.name), "dropped": true])
            }
        }
    }
}

/// `KEYSPACE NAME`, the arguments of `index create` and `index drop`.
struct IndexTarget: ParsableArguments {
    @Argument(help: "NAME or NAME.SCOPE.COLLECTION") var keyspace: Keyspace
    @Argument(help: "The index name.") var name: String
}
