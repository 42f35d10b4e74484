// Synthetic photo libraries shaped like real ones: a shared set of photos, each device holding
// a random ~90% of it under its own PhotoKit-style local identifiers, a few percent duplicated
// (the same content twice on one device), and a few albums. Deterministic: runs compare.
import ConcordJSON
import typealias ConcordDomain.SHA256

/// splitmix64: cheap, well-mixed, reproducible.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(self.next() % UInt64(n)) }
}

enum Encode {
    private static let hex = Array("0123456789ABCDEF".utf8)
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Upper-case UUID text of 16 random bytes (version/variant bits set like a v4 UUID).
    static func uuid(_ rng: inout SplitMix) -> String {
        var bytes: [UInt8] = []
        for _ in 0..<2 { let v = rng.next(); for s in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * s))) } }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(self.hex[Int(b >> 4)]); out.append(self.hex[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Base64url without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i + 2 < bytes.count {
            let t = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for s in [18, 12, 6, 0] { out.append(self.alphabet[Int((t >> UInt32(s)) & 63)]) }
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let t = UInt32(bytes[i]) << 16
            for s in [18, 12] { out.append(self.alphabet[Int((t >> UInt32(s)) & 63)]) }
        } else if rest == 2 {
            let t = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            for s in [18, 12, 6] { out.append(self.alphabet[Int((t >> UInt32(s)) & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The shared set of photos: fingerprint = real SHA-256 of synthetic content (the bytes
/// `concord-sim photo <n>`), base64url, 43 characters.
struct PhotoSet {
    var fingerprints: [String]
    var dates: [String]

    init(count: Int) {
        self.fingerprints = (0..<count).map { Encode.base64URL(SHA256.hash(Array("concord-sim photo \($0)".utf8))) }
        // One photo every ~47 minutes from 2016 on: realistic, distinct creation dates.
        self.dates = (0..<count).map { n in
            let minutes = n * 47
            let day = minutes / 1440, minute = minutes % 1440
            let year = 2016 + day / 336, month = 1 + (day % 336) / 28, dom = 1 + day % 28   // 28-day months: every date exists
            func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
            return "\(year)-\(two(month))-\(two(dom))T\(two(minute / 60)):\(two(minute % 60)):00Z"
        }
    }
}

/// One device's library.
struct DeviceLibrary {
    var name: String
    /// The assets' local identifiers, and which photo of the shared set each one is.
    var localIdentifiers: [String]
    var photoIndex: [Int]
    /// Albums: local identifier, title, member asset positions.
    var albums: [(localIdentifier: String, title: String, members: [Int])]
    var duplicates: Int

    /// `assets` assets: a random ~90% subset of `photos` (2% of them added a second time
    /// under another local identifier), and `albumCount` albums of up to 200 assets.
    init(device: Int, assets: Int, photos: PhotoSet, albumCount: Int = 10) {
        var rng = SplitMix(state: 0xC0_4C0D_0000 &+ UInt64(device) &* 0x1_0000_0001)
        self.name = "sim-device-\(device + 1)"
        self.duplicates = assets / 50
        let unique = min(assets - self.duplicates, photos.fingerprints.count)
        var order = Array(0..<photos.fingerprints.count)
        for i in 0..<unique {   // partial Fisher–Yates: the first `unique` are a random subset
            let j = i + rng.below(order.count - i)
            order.swapAt(i, j)
        }
        var picked = Array(order[0..<unique]).sorted()
        for _ in 0..<(assets - unique) { picked.append(picked[rng.below(unique)]) }
        self.photoIndex = picked
        self.localIdentifiers = picked.map { _ in Encode.uuid(&rng) + "/L0/001" }
        self.albums = (0..<albumCount).map { a in
            let size = min(assets, 50 + rng.below(151))
            var members = Set<Int>()
            while members.count < size { members.insert(rng.below(assets)) }
            return (Encode.uuid(&rng) + "/L0/040", "Album \(a + 1)", members.sorted())
        }
    }

    /// What a device knows of its photos: content hashes (the classic upload), only
    /// PhotoKit's keys (an iPhone with Optimize Storage on one iCloud library), or neither (a
    /// computer that has not hashed yet: the wanted list's case).
    enum Knowledge { case fingerprints, keys, keysAndFingerprints, nothing }

    /// PhotoKit's `A` of photo `p`: the same on every device of the iCloud library.
    static func photoKey(_ p: Int) -> String {
        let hex = String(UInt64(p) &* 0x9E37_79B9_7F4A_7C15, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 16 - hex.count)) + hex
        return "\(padded.prefix(8))-\(padded.dropFirst(8).prefix(4))-4\(padded.dropFirst(12).prefix(3))-8000-\(String(p, radix: 16, uppercase: true).leftPadded(12))"
    }

    /// `PUT /v1/library` body: every asset and album.
    func manifest(_ photos: PhotoSet, knowledge: Knowledge = .fingerprints) -> [UInt8] {
        var w = JSONWriter(capacity: 170 * self.localIdentifiers.count + 4096)
        w.beginObject()
        w.key("assets")
        w.beginArray()
        for (i, local) in self.localIdentifiers.enumerated() {
            let p = self.photoIndex[i]
            w.beginObject()
            w.key("localIdentifier"); w.string(local)
            switch knowledge {
            case .fingerprints: w.key("fingerprint"); w.string(photos.fingerprints[p])
            case .keys: w.key("photoKitCloudIdentifier"); w.string(Self.photoKey(p) + ":001:h")
            case .keysAndFingerprints:
                w.key("fingerprint"); w.string(photos.fingerprints[p])
                w.key("photoKitCloudIdentifier"); w.string(Self.photoKey(p) + ":001:h")
            case .nothing: break
            }
            w.key("mediaType"); w.string(p % 20 == 0 ? "video" : "image")
            w.key("creationDate"); w.string(photos.dates[p])
            w.key("isFavorite"); w.bool(p % 37 == 0)
            w.endObject()
        }
        w.endArray()
        w.key("assetCollections")
        w.beginArray()
        for album in self.albums {
            w.beginObject()
            w.key("localIdentifier"); w.string(album.localIdentifier)
            w.key("fingerprint"); w.string(Encode.base64URL(SHA256.hash(Array("concord-sim album \(album.title)".utf8))))
            w.key("title"); w.string(album.title)
            w.key("assets")
            w.beginArray()
            for m in album.members { w.string(self.localIdentifiers[m]) }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("collectionLists"); w.beginArray(); w.endArray()
        w.endObject()
        return w.bytes
    }
}

/// `{"<key>":[...strings...]}`
func identifiersBody(_ key: String, _ ids: ArraySlice<String>) -> [UInt8] {
    var w = JSONWriter(capacity: 64 + 100 * ids.count)
    w.beginObject()
    w.key(key)
    w.beginArray()
    for id in ids { w.string(id) }
    w.endArray()
    w.endObject()
    return w.bytes
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - self.count)) + self }
}
