// An app developer's first day, as one program: an iPhone and a Mac of one account, written
// against ConcordClient as docs/client.md teaches it. Photos are fake (a few bytes each, hashed
// with SHA-256 as an app hashes an original); everything else is what an app sends and sees.
//
//   concord-example <server URL> <admin token>
//   CONCORD_URL=http://127.0.0.1:8080 CONCORD_ADMIN_TOKEN=… concord-example
//
// One line per step, with what it saw. Each step checks its answers against what the recipe
// expects; the exit status is 1 when any did not (docs/check-example runs it in CI).
import ConcordClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A photo as PhotoKit would describe it to the app.
struct FakePhoto {
    let name: String
    let localIdentifier: String
    /// `PHCloudIdentifier.stringValue`; nil for a photo outside iCloud Photos (no key).
    let photoKitCloudIdentifier: String?
    let creationDate: Date
    /// The original's bytes: what the app hashes when the server wants a fingerprint.
    let original: [UInt8]

    /// What the app uploads first: no fingerprint (hashing may mean downloading the original).
    var asset: Asset { Asset(localIdentifier: self.localIdentifier, mediaType: .image, creationDate: self.creationDate) }
    var fingerprint: String { Fingerprint.sha256(self.original) }
}

/// One device's photo library, keyed by local identifier.
struct FakeLibrary {
    var photos: [FakePhoto]
    var album: AssetCollection
    var albumPhotoKitCloudIdentifier: String

    subscript(_ localIdentifier: String) -> FakePhoto? { self.photos.first { $0.localIdentifier == localIdentifier } }

    /// Keys and creation dates, no fingerprints: step 1 of the recipe.
    func keyedSnapshot() -> (snapshot: LibrarySnapshot, rejected: Int) {
        let strings = Dictionary(uniqueKeysWithValues: self.photos.compactMap { p in p.photoKitCloudIdentifier.map { (p.localIdentifier, $0) } })
        let (assets, rejectedAssets) = PhotoKitCloudIdentifier.keyed(self.photos.map(\.asset), stringValues: strings)
        let (albums, rejectedAlbums) = PhotoKitCloudIdentifier.keyed([self.album], stringValues: [self.album.localIdentifier: self.albumPhotoKitCloudIdentifier])
        return (LibrarySnapshot(assets: assets, assetCollections: albums), rejectedAssets.count + rejectedAlbums.count)
    }
}

/// What one step saw, and what it found wrong.
struct StepReport {
    var saw: [String] = []
    var problems: [String] = []

    mutating func see(_ line: String) { self.saw.append(line) }

    mutating func expect<T: Equatable>(_ got: T, _ expected: T, _ what: String) {
        if got != expected { self.problems.append("\(what): expected \(describe(expected)), got \(describe(got))") }
    }

    mutating func expect(_ condition: Bool, _ what: String) {
        if !condition { self.problems.append(what) }
    }
}

/// Runs the steps in order, one line each; remembers whether any failed.
final class Recipe {
    private(set) var failed = 0
    private var number = 0

    func step(_ title: String, _ body: (inout StepReport) async throws -> Void) async {
        self.number += 1
        var report = StepReport()
        do {
            try await body(&report)
        } catch {
            report.problems.append("threw \(error)")
        }
        let saw = report.saw.joined(separator: "; ")
        if report.problems.isEmpty {
            say("ok   \(self.number). \(title): \(saw)")
        } else {
            self.failed += 1
            say("FAIL \(self.number). \(title): \(saw)\(saw.isEmpty ? "" : " — ")\(report.problems.joined(separator: "; "))")
        }
    }
}

extension Array where Element == JournalPhoto {
    /// The photos as this device resolves them (`-` for a placeholder).
    var localIdentifiers: [String] { self.map { $0.localIdentifier ?? "-" } }
}

/// A value as a line shows it: optionals unwrapped (`nil` when absent), local identifiers by name.
func describe(_ value: Any) -> String {
    if let id = value as? String { return ConcordExample.names[id].map { "\($0)" } ?? "\"\(id)\"" }
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .optional: return mirror.children.first.map { describe($0.value) } ?? "nil"
    case .collection: return "[" + mirror.children.map { describe($0.value) }.joined(separator: ", ") + "]"
    default: return "\(value)"
    }
}

/// One line on stdout, unbuffered (so a crash or a hang still shows the steps before it).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// Local identifiers as a line shows them: by the photo's name (`beach`, `dog copy`).
func short(_ ids: [String]) -> String { "[" + ids.map { ConcordExample.names[$0] ?? $0 }.joined(separator: ", ") + "]" }
func short(_ id: String?) -> String { id.map { ConcordExample.names[$0] ?? $0 } ?? "-" }

@main
struct ConcordExample {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        let env = ProcessInfo.processInfo.environment
        guard let urlString = arguments.first ?? env["CONCORD_URL"], let server = URL(string: urlString),
              let adminToken = arguments.dropFirst().first ?? env["CONCORD_ADMIN_TOKEN"]
        else {
            FileHandle.standardError.write(Data("usage: concord-example <server URL> <admin token> (or CONCORD_URL, CONCORD_ADMIN_TOKEN)\n".utf8))
            exit(2)
        }
        let recipe = Recipe()
        await run(recipe, server: server, adminToken: adminToken)
        if recipe.failed > 0 {
            say("concord-example: \(recipe.failed) step(s) did not see what the recipe expects")
            exit(1)
        }
        say("concord-example: every step as the recipe expects")
    }

    // MARK: - The two libraries

    static let taken = Date(timeIntervalSince1970: 1_750_000_000)

    /// Both devices are signed in to one iCloud Photos library: the same photo has the same
    /// PhotoKit cloud identifier (the same key) on both, under a local identifier of each device.
    /// The scan is outside iCloud Photos on both (imported from a file, AirDropped to the Mac): no key.
    static func library(device: String, duplicateDog: Bool) -> FakeLibrary {
        func id(_ n: Int) -> String { "\(device)-0000-4000-8000-\(String(format: "%012d", n))/L0/001" }
        var photos = [
            FakePhoto(name: "beach", localIdentifier: id(1), photoKitCloudIdentifier: "5A1E6C70-BEAC-4E00-9000-000000000001:001:AQz5beach",
                      creationDate: taken, original: Array("beach.heic".utf8)),
            FakePhoto(name: "sunset", localIdentifier: id(2), photoKitCloudIdentifier: "5A1E6C70-BEAC-4E00-9000-000000000002:001:AQz5sunset",
                      creationDate: taken + 60, original: Array("sunset.heic".utf8)),
            FakePhoto(name: "dog", localIdentifier: id(3), photoKitCloudIdentifier: "5A1E6C70-BEAC-4E00-9000-000000000003:001:AQz5dog",
                      creationDate: taken + 120, original: Array("dog.heic".utf8)),
            FakePhoto(name: "scan", localIdentifier: id(4), photoKitCloudIdentifier: nil,
                      creationDate: taken + 180, original: Array("scan.pdf".utf8)),
        ]
        if duplicateDog {
            // Duplicated in Photos on the Mac: both copies carry the photo's key.
            photos.append(FakePhoto(name: "dog copy", localIdentifier: id(5), photoKitCloudIdentifier: photos[2].photoKitCloudIdentifier,
                                    creationDate: taken + 120, original: Array("dog.heic".utf8)))
        }
        let album = AssetCollection(localIdentifier: "\(device)-0000-4000-8000-000000000040/L0/040", title: "Trip",
                                    assets: [photos[0].localIdentifier, photos[2].localIdentifier])
        return FakeLibrary(photos: photos, album: album, albumPhotoKitCloudIdentifier: "5A1E6C70-BEAC-4E00-9000-000000000040:040:")
    }

    /// The photos' and albums' names by local identifier, for the lines printed.
    static let names: [String: String] = {
        var names: [String: String] = [:]
        for library in [library(device: phoneDevice, duplicateDog: false), library(device: macDevice, duplicateDog: true)] {
            for photo in library.photos { names[photo.localIdentifier] = photo.name }
            names[library.album.localIdentifier] = "Trip album"
        }
        return names
    }()
    static let phoneDevice = "1F0E0001", macDevice = "3AC00002"

    /// Hashes what the server wants, page by page, and sends the fingerprints (docs/client.md's
    /// recipe, step 4: "Hash what is wanted").
    static func hashWanted(_ client: ConcordClient, _ library: FakeLibrary) async throws -> [String] {
        var hashed: [String] = []
        for try await page in client.wanted(limit: 200) {
            var upserts: [Asset] = []
            for wanted in page.objects where wanted.type == .asset {
                guard let photo = library[wanted.localIdentifier] else { continue }
                var asset = photo.asset   // sent without its key, the stored key is kept
                asset.fingerprint = photo.fingerprint   // an app hashes the original here (downloading it if need be)
                upserts.append(asset)
            }
            if !upserts.isEmpty { try await client.applyChanges(LibraryChanges(assets: ObjectChanges(upsert: upserts))) }
            hashed += page.objects.map(\.localIdentifier)
        }
        return hashed
    }

    // MARK: - The recipe

    static func run(_ recipe: Recipe, server: URL, adminToken: String) async {
        let admin = ConcordClient(baseURL: server, token: adminToken)
        let phoneLibrary = library(device: phoneDevice, duplicateDog: false)
        let macLibrary = library(device: macDevice, duplicateDog: true)
        let (phoneBeach, phoneSunset, phoneDog, phoneScan) = (phoneLibrary.photos[0].localIdentifier, phoneLibrary.photos[1].localIdentifier,
                                                              phoneLibrary.photos[2].localIdentifier, phoneLibrary.photos[3].localIdentifier)
        let (macBeach, macSunset, macDog, macScan, macDogCopy) = (macLibrary.photos[0].localIdentifier, macLibrary.photos[1].localIdentifier,
                                                                  macLibrary.photos[2].localIdentifier, macLibrary.photos[3].localIdentifier,
                                                                  macLibrary.photos[4].localIdentifier)

        var account: ConcordClient?
        var accountID = ""
        var phoneDevice: DeviceCredentials?
        var phone: ConcordClient?
        var mac: ConcordClient?
        await recipe.step("account and two devices (admin token, then account token)") { r in
            let credentials = try await admin.createAccount(name: "Ada")
            accountID = credentials.accountID
            let a = admin.withToken(credentials.accountToken)
            let iPhone = try await a.createDevice(name: "iPhone", platform: "iOS")
            let macDevice = try await a.createDevice(name: "Mac", platform: "macOS")
            let devices = try await a.listDevices()
            r.see("account \(credentials.accountID.prefix(8)), devices \(devices.map(\.name).sorted())")
            r.expect(devices.map(\.name).sorted(), ["Mac", "iPhone"], "devices listed")
            (account, phoneDevice) = (a, iPhone)
            phone = a.withToken(iPhone.deviceToken)
            mac = a.withToken(macDevice.deviceToken)
        }
        guard let account, let phoneDevice, let phone, let mac else { return }

        await recipe.step("iPhone uploads keys and creation dates, no fingerprints") { r in
            let (snapshot, rejected) = phoneLibrary.keyedSnapshot()
            let result = try await phone.replaceLibrary(snapshot)
            let status = try await phone.status()
            r.see("inserted \(result.inserted), rejected keys \(rejected); status: \(status.objects) objects, \(status.withKey) with a key, \(status.withFingerprint) with a fingerprint")
            r.expect(result.inserted, 5, "objects inserted")
            r.expect(rejected, 0, "keys rejected")
            r.expect([status.objects, status.withKey, status.withFingerprint], [5, 4, 0], "status objects/withKey/withFingerprint")
        }

        await recipe.step("iPhone: nothing wanted before mapping") { r in
            let page = try await phone.wantedPage(limit: 100)
            r.see("wanted total \(page.total)")
            r.expect(page.total, 0, "wanted before mapping")
        }

        // What the iPhone stores (journal entries, sharing) and what the Mac is later given.
        var phoneCloudIDs: [String: CloudIdentifier] = [:]
        let phoneIDs = [phoneBeach, phoneSunset, phoneDog, phoneScan, phoneLibrary.album.localIdentifier]
        await recipe.step("iPhone maps local → cloud") { r in
            let mappings = try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: phoneIDs)
            for m in mappings { phoneCloudIDs[m.localIdentifier] = m.cloudIdentifier }
            r.see("\(mappings.filter { $0.cloudIdentifier != nil }.count)/\(phoneIDs.count) mapped, scan as \(phoneCloudIDs[phoneScan].map { "\($0.stringValue.prefix(8))…:001:\($0.fingerprint ?? "?")" } ?? "-")")
            r.expect(mappings.allSatisfy { $0.cloudIdentifier?.isWellFormed == true }, "every object mapped to a well-formed cloud identifier")
            r.expect(phoneCloudIDs[phoneScan]?.fingerprint, "", "the scan's record has no fingerprint yet")
        }

        await recipe.step("iPhone hashes what is wanted: the photo outside iCloud Photos") { r in
            let hashed = try await hashWanted(phone, phoneLibrary)
            let status = try await phone.status()
            let again = try await phone.orderedCloudIdentifierMappings(forLocalIdentifiers: [phoneScan])
            r.see("hashed \(short(hashed)); then wanted \(status.wanted), with a fingerprint \(status.withFingerprint); scan now spelled …:001:\(again.first?.cloudIdentifier?.fingerprint?.prefix(8) ?? "?")…")
            r.expect(hashed, [phoneScan], "wanted on the iPhone")
            r.expect(status.wanted, 0, "wanted after hashing")
            r.expect(again.first?.cloudIdentifier?.fingerprint, phoneLibrary.photos[3].fingerprint, "the scan's record took its fingerprint")
            r.expect(again.first?.cloudIdentifier.map { c in phoneCloudIDs[phoneScan]?.isSameRecord(as: c) == true } == true, "the same record, spelled with its fingerprint")
        }

        await recipe.step("Mac uploads keys (the dog duplicated in its library)") { r in
            let (snapshot, rejected) = macLibrary.keyedSnapshot()
            let result = try await mac.replaceLibrary(snapshot)
            r.see("inserted \(result.inserted), rejected keys \(rejected)")
            r.expect(result.inserted, 6, "objects inserted")
            r.expect(rejected, 0, "keys rejected")
        }

        let given = phoneIDs.compactMap { phoneCloudIDs[$0] }   // what the iPhone shared, as it stored it
        var dogCandidates: [String] = []
        await recipe.step("Mac maps cloud → local by link and key only (contentMatch: false)") { r in
            let m = try await mac.orderedLocalIdentifierMappings(for: given, contentMatch: false)
            let byPhoneID = Dictionary(uniqueKeysWithValues: zip(phoneIDs, m))
            dogCandidates = byPhoneID[phoneDog]?.error?.localIdentifiers ?? []
            r.see("found \(m.filter { $0.localIdentifier != nil }.count)/\(m.count); dog: \(byPhoneID[phoneDog]?.error?.name ?? "found") \(short(dogCandidates)); scan: \(byPhoneID[phoneScan]?.error?.name ?? "found")")
            r.expect(byPhoneID[phoneBeach]?.localIdentifier, macBeach, "beach by key")
            r.expect(byPhoneID[phoneSunset]?.localIdentifier, macSunset, "sunset by key")
            r.expect(byPhoneID[phoneLibrary.album.localIdentifier]?.localIdentifier, macLibrary.album.localIdentifier, "album by key")
            r.expect(byPhoneID[phoneDog]?.error?.code, .multipleIdentifiersFound, "dog (two copies carry its key)")
            r.expect(dogCandidates, [macDog, macDogCopy], "the dog's candidates")
            r.expect(byPhoneID[phoneScan]?.error?.code, .identifierNotFound, "scan (no key: content only)")
        }

        await recipe.step("Mac hashes what is wanted: its copy of the scan") { r in
            let hashed = try await hashWanted(mac, macLibrary)
            let status = try await mac.status()
            r.see("hashed \(short(hashed)); then wanted \(status.wanted)")
            r.expect(hashed, [macScan], "wanted on the Mac")
            r.expect(status.wanted, 0, "wanted after hashing")
        }

        await recipe.step("Mac maps cloud → local with content: the scan") { r in
            let scanID = phoneCloudIDs[phoneScan].map { [$0] } ?? []
            let byContent = try await mac.orderedLocalIdentifierMappings(for: scanID)
            let byLink = try await mac.orderedLocalIdentifierMappings(for: scanID, contentMatch: false)
            r.see("scan → \(short(byContent.first?.localIdentifier ?? byContent.first?.error?.name)), then by its stored link → \(short(byLink.first?.localIdentifier ?? byLink.first?.error?.name))")
            r.expect(byContent.first?.localIdentifier, macScan, "the scan by content")
            r.expect(byLink.first?.localIdentifier, macScan, "the scan's link stored")
        }

        await recipe.step("the person chooses the Mac's dog (POST links)") { r in
            guard let dogID = phoneCloudIDs[phoneDog], dogCandidates.contains(macDogCopy) else {
                r.expect(false, "no candidates to choose from")
                return
            }
            try await mac.link(cloudIdentifier: dogID, toLocalIdentifier: macDogCopy)   // the copy the person edited
            let after = try await mac.orderedLocalIdentifierMappings(for: [dogID])
            r.see("candidates \(short(dogCandidates)), the person picks the dog copy; dog → \(short(after.first?.localIdentifier ?? after.first?.error?.name))")
            r.expect(after.first?.localIdentifier, macDogCopy, "the dog after the choice")
        }

        let macIDs = [macBeach, macSunset, macDogCopy, macScan, macLibrary.album.localIdentifier]
        var macCloudIDs: [CloudIdentifier?] = []
        await recipe.step("Mac maps local → cloud: the iPhone's records") { r in
            let m = try await mac.orderedCloudIdentifierMappings(forLocalIdentifiers: macIDs)
            macCloudIDs = m.map(\.cloudIdentifier)
            let same = zip(macCloudIDs, given).filter { mine, theirs in mine?.isSameRecord(as: theirs) == true }.count
            r.see("\(same)/\(macIDs.count) the same records as the iPhone's")
            r.expect(same, macIDs.count, "records shared with the iPhone")
        }

        await recipe.step("iPhone maps the Mac's identifiers cloud → local") { r in
            let m = try await phone.orderedLocalIdentifierMappings(for: macCloudIDs.compactMap { $0 })
            r.see("→ \(short(m.map { $0.localIdentifier ?? $0.error?.name ?? "-" }))")
            r.expect(m.map(\.localIdentifier), [phoneBeach, phoneSunset, phoneDog, phoneScan, phoneLibrary.album.localIdentifier], "the iPhone's objects")
        }

        var journalID = ""
        await recipe.step("live journal feed: the iPhone follows while the Mac writes an entry") { r in
            let start = try await phone.currentJournalChangeToken()
            let feed = Task { () throws -> [JournalChange] in
                var seen: [JournalChange] = []
                for try await change in phone.journalChanges(since: start, options: ConcordClient.LiveSyncOptions(wait: 5)) {
                    seen.append(change)
                    if change.entryIDs.inserted.contains(where: { $0.entryID == "day-1" }) { break }
                }
                return seen
            }
            let watchdog = Task {
                try await Task.sleep(nanoseconds: 30_000_000_000)
                feed.cancel()
            }
            let journal = try await mac.createJournal(title: "Trip")
            journalID = journal.journalID
            let entry = try await mac.putEntry(journalID: journal.journalID, entryID: "day-1", text: "Beach, dog, and the scan of the tickets",
                                               photos: [.local(macBeach), .local(macDogCopy), .local(macScan)])
            let seen = try await feed.value
            watchdog.cancel()
            let journals = seen.flatMap(\.journalIDs.inserted)
            let entries = seen.flatMap(\.entryIDs.inserted)
            r.see("Mac wrote \(entry.photos.count) photos; iPhone saw \(seen.count) change(s): journals inserted \(journals.count), entries inserted \(entries.map(\.entryID))")
            r.expect(journals, [journal.journalID], "journals the iPhone saw inserted")
            r.expect(entries, [JournalEntryID(journalID: journal.journalID, entryID: "day-1")], "entries the iPhone saw inserted")
        }

        await recipe.step("iPhone opens the entry: the Mac's photos as its own") { r in
            let journal = try await phone.journal(journalID)
            let photos = journal.entries.first { $0.entryID == "day-1" }?.photos ?? []
            r.see("day-1 → \(short(photos.localIdentifiers))")
            r.expect(photos.localIdentifiers, [phoneBeach, phoneDog, phoneScan], "day-1 on the iPhone")
        }

        await recipe.step("limited-library picker on the iPhone adds photos (addToEntry)") { r in
            let entry = try await phone.addToEntry(journalID: journalID, entryID: "day-1", localIdentifiers: [phoneSunset, phoneBeach])
            r.see("added [sunset, beach] → \(short(entry.photos.localIdentifiers))")
            r.expect(entry.photos.localIdentifiers, [phoneBeach, phoneDog, phoneScan, phoneSunset], "day-1 after the add (beach was there)")
        }

        await recipe.step("continuous picker on the Mac (a selection session)") { r in
            _ = try await mac.putEntry(journalID: journalID, entryID: "day-2", text: "Evening", photos: [])
            let session = mac.selectionSession(journalID: journalID, entryID: "day-2")
            let selections = [[macSunset], [macSunset, macBeach], [macBeach], [macScan, macBeach, macSunset]]
            // The person picks two photos at once, then, a moment later, two more changes.
            session.update(selections[0])
            session.update(selections[1])
            try await Task.sleep(nanoseconds: 50_000_000)
            session.update(selections[2])
            session.update(selections[3])
            let final = try await session.finish()
            let stored = try await mac.journal(journalID).entries.first { $0.entryID == "day-2" }
            r.see("\(selections.count) updates, \(session.requestsSent) request(s); final \(short(final?.photos.localIdentifiers ?? []))")
            r.expect(final?.photos.localIdentifiers, selections.last, "the session's final entry")
            r.expect(stored?.photos.localIdentifiers, selections.last, "the stored entry")
            r.expect(session.requestsSent >= 1, "at least one request sent")
        }

        await recipe.step("a new iPhone: successor, upload, adopt") { r in
            let successor = try await account.registerSuccessor(of: phoneDevice.deviceID, name: "New iPhone", platform: "iOS")
            var oldStatus = 0
            do { _ = try await phone.currentChangeToken() } catch let error as ConcordError { oldStatus = error.status }
            let newPhone = account.withToken(successor.deviceToken, librarySyncState: LibrarySyncState())
            let (snapshot, _) = phoneLibrary.keyedSnapshot()   // a device transfer keeps Photos' local identifiers
            _ = try await newPhone.replaceLibrary(snapshot)
            let adoption = try await newPhone.adopt()
            let status = try await newPhone.status()
            let entry = try await newPhone.journal(journalID).entries.first { $0.entryID == "day-1" }
            _ = try await newPhone.currentChangeToken()   // its feeds start here
            r.see("replaces \(successor.replaces == phoneDevice.deviceID ? "the old iPhone" : successor.replaces), old token \(oldStatus); adopted \(adoption.adopted), ambiguous \(adoption.ambiguous.count), unmatched \(adoption.unmatched); wanted \(status.wanted); day-1 → \(short(entry?.photos.localIdentifiers ?? []))")
            r.expect(successor.replaces, phoneDevice.deviceID, "replaces")
            r.expect(oldStatus, 401, "the old iPhone's token")
            r.expect(adoption.adopted, 5, "links adopted")
            r.expect(adoption.ambiguous.count, 0, "ambiguous")
            r.expect(status.wanted, 0, "wanted on the new iPhone (no hashing again)")
            r.expect(entry?.photos.localIdentifiers, [phoneBeach, phoneDog, phoneScan, phoneSunset], "day-1 on the new iPhone")
        }

        await recipe.step("the account deleted (its devices, libraries and journals with it)") { r in
            try await admin.deleteAccount(accountID)
            var status = 0
            do { _ = try await account.listDevices() } catch let error as ConcordError { status = error.status }
            r.see("account token then \(status)")
            r.expect(status, 401, "the account token after deletion")
        }
    }
}
