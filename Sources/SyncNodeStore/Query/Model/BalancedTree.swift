extension Array {
    /// Joins the elements pairwise into a balanced binary tree: `a, b, c, d` becomes
    /// `join(join(a, b), join(c, d))`.
    ///
    /// A long `a OR b OR ...` (a `WHERE` of thousands of terms, a big `IN` list) then nests
    /// only log2(n) levels deep, which the parser's and compiler's recursion, and SQLite's
    /// expression depth limit of 1000, all need. Use it for associative operators only.
    ///
    /// - Precondition: the array is not empty.
    func balancedTree<E: Error>(_ join: (Element, Element) throws(E) -> Element) throws(E) -> Element {
        try Self.balancedTree(self[...], join)
    }

    private static func balancedTree<E: Error>(_ terms: ArraySlice<Element>, _ join: (Element, Element) throws(E) -> Element) throws(E) -> Element {
        if terms.count == 1 { return terms[terms.startIndex] }
        let middle = terms.startIndex + terms.count / 2
        return try join(balancedTree(terms[..<middle], join), balancedTree(terms[middle...], join))
    }
}
