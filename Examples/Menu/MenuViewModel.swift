#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import SyncNodeStore
import SyncNodeCombine

/// Ditto's categorized-products join, on live queries: `menu` joins every
/// category with its products (`combineLatest`); `onSale` follows only the
/// categories on sale, and swaps its products query whenever that set
/// changes (`switchToLatest`), so products of stale categories never linger.
@MainActor
public final class MenuViewModel: ObservableObject {
    @Published public private(set) var menu: [CategorizedProducts] = []
    @Published public private(set) var onSale: [CategorizedProducts] = []
    /// The last decoding or query error, if any.
    @Published public private(set) var lastError: (any Error)?

    private let database: Database
    private var subscriptions = Set<AnyCancellable>()

    public init(database: Database) throws {
        self.database = database
        for name in ["categories", "products"] where try database.collection(name: name) == nil {
            _ = try database.createCollection(name: name)
        }
        let categories = try database.createQuery("SELECT meta().id AS id, * AS data FROM categories ORDER BY name")
        let products = try database.createQuery("SELECT meta().id AS id, * AS data FROM products ORDER BY name")
        decoded(categories, as: Category.self)
            .combineLatest(decoded(products, as: Product.self))
            .map(Self.sections)
            .sink { [weak self] in self?.menu = $0 }
            .store(in: &subscriptions)

        let onSaleCategories = try database.createQuery("SELECT meta().id AS id, * AS data FROM categories WHERE isOnSale = true ORDER BY name")
        decoded(onSaleCategories, as: Category.self)
            .removeDuplicates()
            .map { [weak self] categories -> AnyPublisher<[CategorizedProducts], Never> in
                guard let self else { return Empty().eraseToAnyPublisher() }
                return Just(categories)
                    .combineLatest(self.products(inCategories: categories.compactMap(\.id)))
                    .map(Self.sections)
                    .eraseToAnyPublisher()
            }
            .switchToLatest()
            .sink { [weak self] in self?.onSale = $0 }
            .store(in: &subscriptions)
    }

    /// The products of the given categories, live.
    private func products(inCategories ids: [String]) -> AnyPublisher<[Product], Never> {
        do {
            let query = try database.createQuery(
                "SELECT meta().id AS id, * AS data FROM products WHERE ARRAY_CONTAINS($categoryIds, categoryId) ORDER BY name")
            query.parameters = Parameters().setArray(ids.map { .string($0) }, forName: "categoryIds")
            return decoded(query, as: Product.self)
        } catch {
            lastError = error
            return Just([]).eraseToAnyPublisher()
        }
    }

    /// A query's rows as models; a result set that does not decode is
    /// reported in `lastError` and skipped.
    private func decoded<Model: Decodable>(_ query: Query, as type: Model.Type) -> AnyPublisher<[Model], Never> {
        query.changePublisher()
            .compactMap { [weak self] change -> [Model]? in
                do {
                    if let error = change.error { throw error }
                    return try change.results?.data(as: type, dataKey: "data")
                } catch {
                    MainActor.assumeIsolated { self?.lastError = error }
                    return nil
                }
            }
            .eraseToAnyPublisher()
    }

    private static func sections(_ categories: [Category], _ products: [Product]) -> [CategorizedProducts] {
        categories.map { category in
            CategorizedProducts(category: category, products: products.filter { $0.categoryId == category.id })
        }
    }
}
