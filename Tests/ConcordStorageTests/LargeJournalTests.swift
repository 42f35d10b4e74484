import ConcordDomain
@testable import ConcordStorage
import Foundation
import Testing

@Suite struct LargeJournalTests {
    /// A journal of 200 entries × 10 photos on a 100 000-asset device reads back every photo
    /// resolved, and a 50-photo entry by local identifier (records and links created in its one
    /// write) is written whole. Its time is `Benchmarks/run journal`, not asserted here.
    @Test func journalOfTwoThousandPhotosAgainstHundredThousandAssets() throws {
        let dir = try TempDir()
        let n = 100_000
        let (_, service, device) = try largeLibrary(in: dir, assets: n)
        let journal = try service.journals.createJournal(title: "Big", device: device)
        for e in 0..<200 {
            let photos = (0..<10).map { JournalPhotoInput.localIdentifier("ID-\((e * 10 + $0) * 37)/L0/001") }
            _ = try service.journals.putEntry(journalID: journal.journalID, entryID: "entry-\(e)", text: "Entry \(e)", photos: photos, ifMatch: nil, device: device)
        }

        for _ in 0..<2 {
            let detail = try service.journals.journal(journal.journalID, device: device)
            #expect(detail.entries.count == 200)
            #expect(detail.entries.allSatisfy { $0.photos.count == 10 && $0.photos.allSatisfy { if case .found = $0.result { true } else { false } } })
        }

        for round in 0..<3 {
            // 50 photos never mapped before: step 3 creates 50 records and links in the one transaction.
            let photos = (0..<50).map { JournalPhotoInput.localIdentifier("ID-\(50_000 + round * 1000 + $0)/L0/001") }
            let entry = try service.journals.putEntry(journalID: journal.journalID, entryID: "fifty-\(round)", text: "", photos: photos, ifMatch: nil, device: device)
            #expect(entry.photos.count == 50)
        }
    }
}
