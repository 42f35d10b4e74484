import ConcordDomain
@testable import ConcordStorage
import Foundation
import Testing

@Suite struct JournalPerformanceTests {
    /// Reading a journal of 200 entries × 10 photos on a 100 000-asset device is one batched resolution
    /// (a handful of statements for all 2000 photos), and writing a 50-photo entry by local identifier is
    /// one write transaction. Debug build: times are printed, bounds only catch a per-photo query regression.
    @Test func journalOfTwoThousandPhotosAgainstHundredThousandAssets() throws {
        let dir = try TempDir()
        let n = 100_000
        let (_, service, device) = try largeLibrary(in: dir, assets: n)
        let journal = try service.journals.createJournal(title: "Big", device: device)
        for e in 0..<200 {
            let photos = (0..<10).map { JournalPhotoInput.localIdentifier("ID-\((e * 10 + $0) * 37)/L0/001") }
            _ = try service.journals.putEntry(journalID: journal.journalID, entryID: "entry-\(e)", text: "Entry \(e)", photos: photos, ifMatch: nil, device: device)
        }

        var bestRead = Double.infinity
        for _ in 0..<5 {
            let t0 = threadCPUSeconds()
            let detail = try service.journals.journal(journal.journalID, device: device)
            bestRead = min(bestRead, threadCPUSeconds() - t0)
            #expect(detail.entries.count == 200)
            #expect(detail.entries.allSatisfy { $0.photos.count == 10 && $0.photos.allSatisfy { if case .found = $0.result { true } else { false } } })
        }

        var bestWrite = Double.infinity
        for round in 0..<3 {
            // 50 photos never mapped before: step 3 creates 50 records and links in the one transaction.
            let photos = (0..<50).map { JournalPhotoInput.localIdentifier("ID-\(50_000 + round * 1000 + $0)/L0/001") }
            let t0 = threadCPUSeconds()
            let entry = try service.journals.putEntry(journalID: journal.journalID, entryID: "fifty-\(round)", text: "", photos: photos, ifMatch: nil, device: device)
            bestWrite = min(bestWrite, threadCPUSeconds() - t0)
            #expect(entry.photos.count == 50)
        }
        print("perf: journal read 200 entries × 10 photos \(String(format: "%.2f", bestRead * 1000)) ms CPU; entry write 50 new photos by local identifier \(String(format: "%.2f", bestWrite * 1000)) ms CPU; library \(n)")
        #expect(bestRead < 0.5)
        #expect(bestWrite < 0.5)
    }
}
