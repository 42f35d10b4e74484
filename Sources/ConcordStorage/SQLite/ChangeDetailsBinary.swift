import ConcordBytes
import ConcordDomain

/// SQLite's binary form of a change's details (migration 13, docs/scaling.md): a history entry
/// lists every identifier a change touched, and a first upload's lists a million of them. In
/// text (`ChangeDetailsCodec`, what PostgreSQL stores) each is a line of two letters and the
/// identifier; here PhotoKit's usual `UUID/L0/001` shape takes 17 bytes instead of 46.
///
/// Layout: a version byte (1), then one entry per identifier, in the text form's order (assets,
/// albums, folders; inserted, updated, deleted). An entry is a tag byte — its list in the low four
/// bits (group × 3 + kind), its form in the high four — then:
/// - form 0: the identifier as a varint length and its UTF-8 bytes;
/// - form 1: an upper-case UUID's 16 bytes, then the rest as a varint length and bytes;
/// - form 2: an upper-case UUID's 16 bytes, the rest being `/L0/001`.
///
/// What the text form would take (`ChangeDetailsCodec.encodedByteCount`) is stored beside it: the
/// history's byte bound (`history.maxBytesPerDevice`) counts that on both engines, so the binary
/// form changes how much SQLite stores, not how much history it keeps.
enum ChangeDetailsBinary {
    private static let version: UInt8 = 1
    private static let photoKitSuffix = Array("/L0/001".utf8)
    // nonisolated(unsafe): a constant; key paths are not Sendable-typed, but these are never mutated.
    nonisolated(unsafe) private static let lists: [(ObjectType, WritableKeyPath<ChangeLists, IdentifierList>)] = [
        (.asset, \.inserted), (.asset, \.updated), (.asset, \.deleted),
        (.assetCollection, \.inserted), (.assetCollection, \.updated), (.assetCollection, \.deleted),
        (.collectionList, \.inserted), (.collectionList, \.updated), (.collectionList, \.deleted),
    ]

    static func encode(_ details: ChangeDetails) -> [UInt8] {
        var out: [UInt8] = [Self.version]
        out.reserveCapacity(1 + Self.count(details) * 18)
        for (list, (type, path)) in Self.lists.enumerated() {
            let ids = details[type][keyPath: path]
            for i in ids.indices { ids.withUTF8(at: i) { Self.append(UInt8(list), $0, to: &out) } }
        }
        return out
    }

    private static func append(_ list: UInt8, _ id: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        if id.count >= 36, let uuid = CompactText.guidBytes(UnsafeBufferPointer(rebasing: id[0..<36])) {
            let rest = UnsafeBufferPointer(rebasing: id[36...])
            if rest.elementsEqual(Self.photoKitSuffix) {
                out.append(2 << 4 | list)
                out += uuid
            } else {
                out.append(1 << 4 | list)
                out += uuid
                Varint.append(UInt64(rest.count), to: &out)
                out += rest
            }
        } else {
            out.append(list)
            Varint.append(UInt64(id.count), to: &out)
            out += id
        }
    }

    /// The details `encode` wrote; nil when the bytes are not such an encoding.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ChangeDetails? {
        guard bytes.first == Self.version else { return nil }
        var details = ChangeDetails()
        // One identifier at a time, in a buffer reused for all: the lists keep bytes (`IdentifierList`).
        var id: [UInt8] = []
        id.reserveCapacity(256)
        var i = 1
        while i < bytes.count {
            let tag = bytes[i]
            i += 1
            let list = Int(tag & 15)
            guard list < Self.lists.count else { return nil }
            id.removeAll(keepingCapacity: true)
            switch tag >> 4 {
            case 0:
                guard let text = Self.readText(bytes, &i) else { return nil }
                id += text
            case 1, 2:
                guard i + 16 <= bytes.count else { return nil }
                let guid = UnsafeRawBufferPointer(rebasing: bytes[i..<i + 16])
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
                    id += UnsafeBufferPointer(rebasing: text[0..<CompactText.writeGUIDText(guid, into: text.baseAddress!)])
                }
                i += 16
                if tag >> 4 == 2 {
                    id += Self.photoKitSuffix
                } else {
                    guard let rest = Self.readText(bytes, &i) else { return nil }
                    id += rest
                }
            default:
                return nil
            }
            let (type, path) = Self.lists[list]
            id.withUnsafeBufferPointer { details[type][keyPath: path].append(utf8: $0) }
        }
        return details
    }

    private static func count(_ details: ChangeDetails) -> Int {
        Self.lists.reduce(0) { $0 + details[$1.0][keyPath: $1.1].count }
    }

    /// A varint length and that many bytes from `i` on (a view into `bytes`); nil when they run past its end.
    private static func readText(_ bytes: UnsafeRawBufferPointer, _ i: inout Int) -> UnsafeRawBufferPointer? {
        guard let length = Varint.read(bytes, &i), length <= bytes.count - i else { return nil }
        defer { i += length }
        return UnsafeRawBufferPointer(rebasing: bytes[i..<i + length])
    }
}
