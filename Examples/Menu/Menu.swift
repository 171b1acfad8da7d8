import SyncNodeStore

/// A menu category (Ditto's Combine article): products point at it by ID.
public struct Category: Codable, Identifiable, Equatable, Sendable {
    @DocumentID public var id: String? = nil
    public var name: String
    public var isOnSale = false

    public init(id: String, name: String, isOnSale: Bool = false) {
        self.id = id
        self.name = name
        self.isOnSale = isOnSale
    }
}

public struct Product: Codable, Identifiable, Equatable, Sendable {
    @DocumentID public var id: String? = nil
    public var name: String
    public var detail: String
    public var categoryId: String

    public init(id: String, name: String, detail: String, categoryId: String) {
        self.id = id
        self.name = name
        self.detail = detail
        self.categoryId = categoryId
    }
}

/// One section of the menu: a category and its products.
public struct CategorizedProducts: Identifiable, Equatable, Sendable {
    public var category: Category
    public var products: [Product]
    public var id: String? { category.id }
}
