import Foundation
@_spi(Testing) import LocalStorageKit
import Testing

/// The listings of the article "Loading Through the Cache" run on a store whose clock is virtual: their load
/// timeout (30 s of the store's clock) is then never reached, however slowly a loaded machine runs them.
@Suite struct LoadingThroughTheCacheArticle {
    @Test func loadsOnceThenServesTheRecord() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = VirtualClock()
        let storage = try LocalStorage(configuration: configuration)
        let (product, fresh) = try await LoadingThroughTheCacheSnippets.load(
            storage, catalog: LoadingThroughTheCacheSnippets.Catalog())
        #expect(product?.title == "Loaded sku_108")
        #expect(fresh?.id == product?.id)
        #expect(try await storage.count(LoadingThroughTheCacheSnippets.Product.self) == 1)
    }
}
