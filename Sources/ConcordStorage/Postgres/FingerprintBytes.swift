import ConcordDomain

/// PostgreSQL's stored form of a fingerprint (`bytea`), both ways, without the round trip through
/// an encoding to check a text is canonical: `Base64URL.decode` accepts exactly the canonical
/// unpadded texts (the alphabet only, no length of 4k + 1, zero unused bits), and those encode back
/// to themselves. `PostgresCompact.fingerprint` and `fingerprintText` are these. The rule: a canonical
/// base64url text whose bytes do not begin with 0x00 is stored as those bytes; every other
/// non-empty text as 0x00 and its UTF-8; the empty fingerprint as no bytes.
enum FingerprintBytes {
    static func stored(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { utf8 in
            guard !utf8.isEmpty else { return [] }
            if let bytes = Base64URL.decode(UnsafeRawBufferPointer(utf8)), let first = bytes.first, first != 0 { return bytes }
            return [UInt8](unsafeUninitializedCapacity: utf8.count + 1) { out, n in
                out[0] = 0
                _ = UnsafeMutableBufferPointer(rebasing: out[1...]).initialize(from: utf8)
                n = utf8.count + 1
            }
        }
    }

    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        guard let first = bytes.first else { return "" }
        if first == 0 { return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[1...]), as: UTF8.self) }
        return Base64URL.encode(bytes)
    }
}
