import ConcordBytes
import Foundation
import Testing

@testable import ConcordDomain

/// `LibrarySnapshot` keeps a manifest packed: every object unpacks to exactly what was
/// appended, identifiers are read and ordered as bytes, and `SnapshotIdentifiers` finds duplicates
/// and members as a dictionary of strings would.
@Suite struct LibrarySnapshotTests {
    /// One object per shape: each optional field present and absent, every flag, every media type,
    /// empty and non-ASCII strings, a title past 64 KiB (lengths are 4 bytes), members of both kinds.
    static let shapes: [LibraryObject] = [
        .asset("A/L0/001", fingerprint: ""),
        .asset("B/L0/001", fingerprint: String(repeating: "f", count: 43), mediaType: .video, creationDate: "2024-01-01T00:00:00Z",
               isFavorite: true),
        LibraryObject(localIdentifier: "C/L0/001", type: .asset, fingerprint: "abc", mediaType: .audio,
                      creationDate: "2024-02-29T12:00:00.5+01:00", modificationDate: "2025-01-01T00:00:00Z", hasAdjustments: true,
                      isFavorite: false, photoKitCloudIdentifier: "A:C:H"),
        LibraryObject(localIdentifier: "D/L0/001", type: .asset, fingerprint: "x", mediaType: .unknown),
        LibraryObject(localIdentifier: "Album/L0/040", type: .assetCollection, fingerprint: "", title: "Été 🌞",
                      members: ["A/L0/001", "B/L0/001"], appCreated: true),
        LibraryObject(localIdentifier: "Folder/L0/020", type: .collectionList, fingerprint: "", title: "",
                      members: ["Album/L0/040"]),
        LibraryObject(localIdentifier: "é/L0/040", type: .assetCollection, fingerprint: "",
                      title: String(repeating: "t", count: 70_000), members: []),
    ]

    @Test(arguments: Self.shapes.indices)
    func everyShapeUnpacksAsAppended(_ n: Int) {
        let snapshot = LibrarySnapshot(objects: [Self.shapes[n]])
        #expect(snapshot.count == 1)
        #expect(snapshot[0] == Self.shapes[n])
        #expect(snapshot.type(at: 0) == Self.shapes[n].type)
        #expect(snapshot.withIdentifier(at: 0) { Array($0) } == Array(Self.shapes[n].localIdentifier.utf8))
    }

    @Test func aSnapshotOfManyKeepsOrderAndEquality() {
        let objects = Self.shapes + Self.shapes.reversed()
        let snapshot = LibrarySnapshot(objects: objects)
        #expect(snapshot.objects == objects)
        #expect(snapshot == LibrarySnapshot(objects: objects))
        #expect(snapshot != LibrarySnapshot(objects: Self.shapes))
        #expect(LibrarySnapshot().isEmpty && LibrarySnapshot(objects: []) == LibrarySnapshot())
    }

    /// Byte order, as `utf8Precedes` orders strings: shared 8-byte prefixes, a prefix of another
    /// identifier, bytes above 0x7F, and identifiers shorter than 8 bytes.
    @Test func numbersComeInIdentifierByteOrder() {
        let ids = ["ABCDEFGH-2", "ABCDEFGH-10", "ABCDEFGH", "ABCDEFGH-1", "a", "Z", "é", "e", "ABC", "ABCDEFGHI",
                   "00000000-0000-4000-8000-000000000001/L0/001", "00000000-0000-4000-8000-000000000000/L0/001"]
        let snapshot = LibrarySnapshot(objects: ids.map { .asset($0, fingerprint: "") })
        let ordered = snapshot.numbersInIdentifierOrder().map { ids[$0] }
        #expect(ordered == ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    @Test func identifiersFindDuplicatesAndMembersByBytes() {
        let ids = (0..<5000).map { String(format: "%08X-0000-4000-8000-000000000000/L0/001", $0) } + ["x", "é"]
        let snapshot = LibrarySnapshot(objects: ids.map { .asset($0, fingerprint: "") } + [.asset(ids[1234], fingerprint: "")])
        var table = SnapshotIdentifiers(capacity: snapshot.count)
        var inserted = 0
        for i in 0..<ids.count where table.insert(i, of: snapshot) { inserted += 1 }
        #expect(inserted == ids.count)
        let repeated = table.insert(ids.count, of: snapshot)
        #expect(!repeated)   // the repeated identifier
        for (i, id) in ids.enumerated() { #expect(table.number(of: id, in: snapshot) == i) }
        #expect(table.number(of: "absent", in: snapshot) == nil)
        #expect(table.number(of: "e", in: snapshot) == nil)
    }
}

/// `PackedObjectRows`: the mapping rows a write hands to the index come back field for field.
@Suite struct PackedObjectRowsTests {
    static let objects: [StoredObject] = [
        StoredObject(object: .asset("A/L0/001", fingerprint: "fp-a"), link: nil),
        StoredObject(object: .asset("B/L0/001", fingerprint: "", creationDate: "1969-12-31T23:59:59Z"),
                     link: CloudRecord(guid: "00000000-0000-7000-8000-000000000001", type: .asset, fingerprint: "")),
        StoredObject(object: LibraryObject(localIdentifier: "C/L0/001", type: .asset, fingerprint: "fp-c", creationDate: "2024-01-01T00:00:00Z",
                                           photoKitCloudIdentifier: "K1:001:H1"), link: nil),
        StoredObject(object: LibraryObject(localIdentifier: "Été/L0/040", type: .assetCollection, fingerprint: "", title: "t",
                                           members: ["A/L0/001"]), link: CloudRecord(guid: "not a canonical guid", type: .assetCollection, fingerprint: "")),
    ]

    @Test func everyRowComesBackAsStored() {
        let packed = PackedObjectRows(Self.objects)
        #expect(packed.count == Self.objects.count)
        var rows: [MappingObjectRow] = []
        packed.forEach(device: "D") { rows.append($0) }
        #expect(rows.count == Self.objects.count)
        for (row, s) in zip(rows, Self.objects) {
            #expect(row.deviceID == "D")
            #expect(row.localIdentifier == s.object.localIdentifier && row.type == s.object.type && row.fingerprint == s.object.fingerprint)
            #expect(row.linkedGUID == s.link?.guid && row.keyA == s.object.key?.a && row.creationSecond == s.object.creationSecond)
        }
        #expect(rows[1].creationSecond == -1 && rows[2].keyA != nil)
    }

    @Test func noRowsPackToNothing() {
        var called = false
        PackedObjectRows([]).forEach(device: "D") { _ in called = true }
        #expect(!called && PackedObjectRows([]).count == 0)
    }
}

/// `IdentifierList`: a change's list, packed, reads back as the strings appended.
@Suite struct IdentifierListTests {
    static let cases: [[String]] = [[], [""], ["a"], ["", "b", ""], ["é", "🌞/L0/001", String(repeating: "x", count: 300)],
                                    (0..<1000).map { String(format: "%08X-0000-4000-8000-000000000000/L0/001", $0) }]

    @Test(arguments: Self.cases)
    func readsBackAsAppended(_ strings: [String]) {
        var list = IdentifierList()
        for s in strings { list.append(s) }
        #expect(Array(list) == strings)
        #expect(list.count == strings.count && list.isEmpty == strings.isEmpty)
        #expect(list == IdentifierList(strings))
        #expect(list.indices.map { list.utf8Count(at: $0) } == strings.map(\.utf8.count))
        #expect(list.indices.map { i in list.withUTF8(at: i) { Array($0) } } == strings.map { Array($0.utf8) })
    }

    @Test func equalListsHashAlikeAndBoundariesCount() {
        let ab: IdentifierList = ["a", "b"]
        var built = IdentifierList()
        built.append(contentsOf: ["a", "b"])
        #expect(ab == built && ab.hashValue == built.hashValue)
        #expect(ab != ["ab"])   // the same bytes, cut elsewhere
        #expect(ab != ["a", "b", ""])
    }
}
