import ConcordBytes
import ConcordDomain

// The text forms of a change's details, stored by both engines (`changes.details`,
// `journal_changes.details`): one codec each, over one line format, so the two engines store the
// same bytes.

/// One line per key, `<group letter><kind letter><key>`, kinds `i`/`u`/`d` (inserted, updated,
/// deleted); keys hold no control characters, so "\n" separates them unambiguously.
private enum DetailLines {
    /// The lines of each group's lists, groups in the order given.
    /// Written straight into one string sized up front (`byteCount`) from the lists' bytes: a first
    /// upload's change lists a million identifiers, and a string per line, or a second buffer,
    /// would double what the commit holds.
    static func encode(_ groups: [(letter: String, inserted: IdentifierList, updated: IdentifierList, deleted: IdentifierList)]) -> String {
        let count = Self.byteCount(groups)
        return String(unsafeUninitializedCapacity: count) { out in
            var at = 0
            for group in groups {
                let letter = UInt8(ascii: group.letter.unicodeScalars.first!)
                for (kind, list) in [(UInt8(ascii: "i"), group.inserted), (UInt8(ascii: "u"), group.updated), (UInt8(ascii: "d"), group.deleted)] {
                    for i in list.indices {
                        if at > 0 { out[at] = UInt8(ascii: "\n"); at += 1 }
                        out[at] = letter
                        out[at + 1] = kind
                        at += 2
                        list.withUTF8(at: i) { id in
                            if let from = id.baseAddress { (out.baseAddress! + at).update(from: from, count: id.count) }
                            at += id.count
                        }
                    }
                }
            }
            return at
        }
    }

    /// The bytes `encode` writes: two letters and the key per line, lines separated by one byte.
    static func byteCount(_ groups: [(letter: String, inserted: IdentifierList, updated: IdentifierList, deleted: IdentifierList)]) -> Int {
        var bytes = 0
        for group in groups {
            for list in [group.inserted, group.updated, group.deleted] { bytes += list.indices.reduce(0) { $0 + list.utf8Count(at: $1) + 3 } }
        }
        return max(0, bytes - 1)
    }

    /// Calls `add` for each well-formed line with its group letter, the list it names and its key;
    /// a line of an unknown kind or too short to hold one is skipped.
    /// The key is passed as its bytes, valid during the call only.
    static func decode(_ s: String, _ add: (UInt8, WritableKeyPath<ChangeLists, IdentifierList>, UnsafeBufferPointer<UInt8>) -> Void) {
        var s = s
        s.withUTF8 { text in
            for line in text.split(separator: UInt8(ascii: "\n")) {
                guard line.count > 2 else { continue }
                let list: WritableKeyPath<ChangeLists, IdentifierList>
                switch line[line.startIndex + 1] {
                case UInt8(ascii: "i"): list = \.inserted
                case UInt8(ascii: "u"): list = \.updated
                case UInt8(ascii: "d"): list = \.deleted
                default: continue
                }
                add(line[line.startIndex], list, UnsafeBufferPointer(rebasing: line.dropFirst(2)))
            }
        }
    }
}

/// Change details as text: `a`/`c`/`l` for assets/collections/lists, keys are local identifiers.
enum ChangeDetailsCodec {
    private static let letters: [(ObjectType, UInt8)] = [(.asset, UInt8(ascii: "a")), (.assetCollection, UInt8(ascii: "c")),
                                                         (.collectionList, UInt8(ascii: "l"))]

    static func encode(_ d: ChangeDetails) -> String {
        DetailLines.encode(Self.groups(d))
    }

    /// The bytes `encode(d)` takes, without writing it (SQLite's binary history counts these for the
    /// byte bound, `ChangeDetailsBinary`).
    static func encodedByteCount(_ d: ChangeDetails) -> Int {
        DetailLines.byteCount(Self.groups(d))
    }

    private static func groups(_ d: ChangeDetails) -> [(letter: String, inserted: IdentifierList, updated: IdentifierList, deleted: IdentifierList)] {
        Self.letters.map { type, letter in
            let lists = d[type]
            return (String(UnicodeScalar(letter)), lists.inserted, lists.updated, lists.deleted)
        }
    }

    static func decode(_ s: String) -> ChangeDetails {
        var d = ChangeDetails()
        DetailLines.decode(s) { letter, list, id in
            guard let type = Self.letters.first(where: { $0.1 == letter })?.0 else { return }
            d[type][keyPath: list].append(utf8: id)
        }
        return d
    }
}

/// Journal change details as text: `j`/`e` for journals/entries, keys are journal IDs and
/// `<journalID>/<entryID>`.
enum JournalChangeDetailsCodec {
    static func encode(_ d: JournalChangeDetails) -> String {
        DetailLines.encode([("j", d.journals.inserted, d.journals.updated, d.journals.deleted),
                            ("e", d.entries.inserted, d.entries.updated, d.entries.deleted)])
    }

    static func decode(_ s: String) -> JournalChangeDetails {
        var journals = ChangeLists(), entries = ChangeLists()
        DetailLines.decode(s) { letter, list, key in
            switch letter {
            case UInt8(ascii: "j"): journals[keyPath: list].append(utf8: key)
            case UInt8(ascii: "e"): entries[keyPath: list].append(utf8: key)
            default: break
            }
        }
        return JournalChangeDetails(journals: journals, entries: entries)
    }
}
