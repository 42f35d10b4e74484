import ConcordDomain
import Foundation
import Testing

/// `ChangeDetails[type]` mutates the part in place: with a get/set subscript every
/// `details[type].inserted.append(id)` copied the whole list, so one upload of n objects
/// cost O(n²) (16 000 assets took tens of seconds in `PUT /v1/library`).
@Test func changeDetailsSubscriptAppendsInPlace() {
    var details = ChangeDetails()
    let ids = (0..<100_000).map { "asset-\($0)" }
    let start = Date()
    for id in ids {
        details[.asset].inserted.append(id)
        details[.collectionList].deleted.append(id)
    }
    let elapsed = Date().timeIntervalSince(start)
    #expect(details.assets.inserted.count == 100_000 && details.collectionLists.deleted.count == 100_000)
    #expect(details.assetCollections.isEmpty)
    // Linear is about a second in a debug build under load; the quadratic copy was minutes.
    #expect(elapsed < 20, "appending 200 000 identifiers took \(elapsed) s")
}
