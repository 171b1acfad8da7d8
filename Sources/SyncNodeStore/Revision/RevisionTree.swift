/// The revision tree of one document: every known revision with its parent,
/// stored compactly in the document's row. Bodies live elsewhere (the row
/// holds the winner's; other revisions' bodies are in the revision-body table).
struct RevisionTree: Equatable, Sendable {
    struct Node: Equatable, Sendable {
        var rev: String
        /// Index of the parent in `nodes`; nil for a root (the first revision,
        /// or the oldest one left after pruning).
        var parent: Int?
        var deleted: Bool
        var sequence: Int64
    }

    private(set) var nodes: [Node] = []

    init() {}

    init(nodes: [Node]) { self.nodes = nodes }

    func index(of rev: String) -> Int? { nodes.firstIndex { $0.rev == rev } }

    /// Whether the tree is one line of edits, each revision the child of the one before:
    /// the usual tree, whose only leaf is the last revision (asked on every save).
    private var isLine: Bool {
        nodes.first?.parent == nil && nodes.indices.dropFirst().allSatisfy { nodes[$0].parent == $0 - 1 }
    }

    /// Indices of revisions that have no child.
    var leaves: [Int] {
        if isLine { return nodes.isEmpty ? [] : [nodes.count - 1] }
        var isParent = [Bool](repeating: false, count: nodes.count)
        for n in nodes { if let p = n.parent { isParent[p] = true } }
        return nodes.indices.filter { !isParent[$0] }
    }

    /// Whether more than one leaf is live: a conflict. (Most trees are a single revision.)
    var hasConflict: Bool {
        nodes.count > 1 && !isLine && leaves.count(where: { !nodes[$0].deleted }) > 1
    }

    /// The winning leaf (CouchDB's order, ``RevisionID/wins(_:over:)``); nil only for an empty tree.
    var winner: Int? {
        if isLine { return nodes.isEmpty ? nil : nodes.count - 1 }
        return leaves.max { a, b in
            RevisionID.wins((nodes[b].rev, nodes[b].deleted), over: (nodes[a].rev, nodes[a].deleted))
        }
    }

    func isLeaf(_ i: Int) -> Bool { !nodes.contains { $0.parent == i } }

    /// Revision IDs from `index` back to its root, newest first.
    func history(from index: Int, limit: Int = .max) -> [String] {
        var out: [String] = []
        var i: Int? = index
        while let j = i, out.count < limit {
            out.append(nodes[j].rev)
            i = nodes[j].parent
        }
        return out
    }

    /// Adds a revision as a child of `parent` and returns its index.
    @discardableResult
    mutating func add(rev: String, parent: Int?, deleted: Bool, sequence: Int64) -> Int {
        nodes.append(Node(rev: rev, parent: parent, deleted: deleted, sequence: sequence))
        return nodes.count - 1
    }

    /// Grafts a revision received with its ancestry (`history`, newest first,
    /// as in CouchDB's `_revisions`), adding the missing ancestors without
    /// bodies. A branch that shares no revision with the tree becomes a new
    /// root. Returns the new leaf's index, or nil when the revision was known.
    mutating func graft(history: [String], deleted: Bool, sequence: Int64) -> Int? {
        guard let newest = history.first, index(of: newest) == nil else { return nil }
        var parent: Int? = nil
        var firstMissing = history.count
        for (i, rev) in history.enumerated().dropFirst() {
            if let known = index(of: rev) {
                parent = known
                firstMissing = i
                break
            }
        }
        for i in stride(from: firstMissing - 1, through: 0, by: -1) {
            parent = add(rev: history[i], parent: parent, deleted: i == 0 && deleted, sequence: sequence)
        }
        return parent
    }

    /// Forgets revisions more than `revsLimit` generations back from every
    /// leaf (CouchDB's stemming). Returns the revision IDs removed.
    mutating func prune(revsLimit: Int) -> [String] {
        guard nodes.count > revsLimit else { return [] }
        var keep = [Bool](repeating: false, count: nodes.count)
        for leaf in leaves {
            var i: Int? = leaf
            var depth = 0
            while let j = i, depth < revsLimit {
                keep[j] = true
                i = nodes[j].parent
                depth += 1
            }
        }
        guard keep.contains(false) else { return [] }
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        var kept: [Node] = []
        var removed: [String] = []
        for (i, node) in nodes.enumerated() {
            if keep[i] {
                newIndex[i] = kept.count
                kept.append(node)
            } else {
                removed.append(node.rev)
            }
        }
        for i in kept.indices {
            kept[i].parent = kept[i].parent.flatMap { newIndex[$0] }
        }
        nodes = kept
        return removed
    }

    // MARK: - Storage form
    //
    // One line per revision: `rev TAB parent TAB deleted TAB sequence`, with
    // parent -1 for roots. Revision IDs are validated to hold no whitespace.

    /// The storage form as UTF-8, built as bytes: the tree is written on every save.
    var serialized: [UInt8] {
        var out = JSONWriter(capacity: nodes.count * 64)
        for (i, n) in nodes.enumerated() {
            if i > 0 { out.bytes.append(0x0A) }
            out.writeRaw(n.rev)
            out.bytes.append(0x09)
            out.writeInteger(Int64(n.parent ?? -1))
            out.writeRaw(n.deleted ? "\t1\t" as StaticString : "\t0\t")
            out.writeInteger(n.sequence)
        }
        return out.bytes
    }

    init(serialized: String) throws(StoreError) {
        var text = serialized
        let parsed: [Node]? = text.withUTF8 { bytes in
            var nodes: [Node] = []
            var i = 0
            func field() -> Range<Int> {
                let start = i
                while i < bytes.count, bytes[i] != 0x09, bytes[i] != 0x0A { i += 1 }
                return start..<i
            }
            func integer(_ r: Range<Int>) -> Int64? {
                var negative = false, value: Int64 = 0, any = false
                for j in r {
                    if j == r.lowerBound, bytes[j] == UInt8(ascii: "-") { negative = true; continue }
                    guard bytes[j] >= 0x30, bytes[j] <= 0x39 else { return nil }
                    value = value &* 10 &+ Int64(bytes[j] - 0x30)
                    any = true
                }
                return any ? (negative ? 0 &- value : value) : nil
            }
            while i < bytes.count {
                let rev = field(); i += 1
                let parent = field(); i += 1
                let deleted = field(); i += 1
                let seq = field(); i += 1
                guard !rev.isEmpty, let p = integer(parent), p < nodes.count, let s = integer(seq) else { return nil }
                nodes.append(Node(
                    rev: String(decoding: UnsafeBufferPointer(rebasing: bytes[rev]), as: UTF8.self),
                    parent: p >= 0 ? Int(p) : nil,
                    deleted: deleted.count == 1 && bytes[deleted.lowerBound] == UInt8(ascii: "1"),
                    sequence: s))
            }
            return nodes
        }
        guard let parsed else { throw .storage("corrupt revision tree '\(serialized.prefix(200))'") }
        nodes = parsed
    }
}
