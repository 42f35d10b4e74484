import ConcordDomain
import Foundation
import Testing

/// `ChangeDetails[type]` mutates the part in place: with a get/set subscript every
/// `details[type].inserted.append(id)` copied the whole list, so one upload of n objects
/// cost O(n²) (16 000 assets took tens of seconds in `PUT /v1/library`).
///
/// Counted, not timed: a list appended in place moves its bytes only when it grows (a few dozen
/// times for 100 000 identifiers), a copied one on every append. (The time of the appends is
/// `Benchmarks/run micro`.)
@Test func changeDetailsSubscriptAppendsInPlace() {
    var details = ChangeDetails()
    let ids = (0..<100_000).map { "asset-\($0)" }
    var moves = (inserted: 0, deleted: 0)
    var last: (inserted: UnsafePointer<UInt8>?, deleted: UnsafePointer<UInt8>?) = (nil, nil)
    for id in ids {
        details[.asset].inserted.append(id)
        details[.collectionList].deleted.append(id)
        let now = (inserted: details.assets.inserted.withUTF8(at: 0) { $0.baseAddress },
                   deleted: details.collectionLists.deleted.withUTF8(at: 0) { $0.baseAddress })
        if now.inserted != last.inserted { moves.inserted += 1 }
        if now.deleted != last.deleted { moves.deleted += 1 }
        last = now
    }
    #expect(details.assets.inserted.count == 100_000 && details.collectionLists.deleted.count == 100_000)
    #expect(details.assetCollections.isEmpty)
    // Growth by doubling: about log2 of 1.3 MB; a copy per append would be 100 000.
    #expect(moves.inserted < 200 && moves.deleted < 200, "the lists' bytes moved \(moves) times in 100 000 appends each")
}
