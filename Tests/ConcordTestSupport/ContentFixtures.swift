import ConcordDomain
import ConcordSHA256

// Fingerprints for synthetic content that the suites share. Two series, not interchangeable (each
// suite keeps to the one its expected values were written with).

/// The canonical fingerprint (base64url SHA-256) of the bytes "content-<n>": the storage and
/// domain suites' content number `n`.
public func contentFingerprint(_ n: Int) -> String {
    Base64URL.encode(SHA256.hash(Array("content-\(n)".utf8)))
}

/// 32 bytes that stand for the fingerprint of content number `n` in the app and client suites
/// (a xorshift of `n`: distinct per number, no hashing); they send it base64url.
public func fingerprintBytes(_ n: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 32)
    var x = UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    for i in 0..<32 {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        bytes[i] = UInt8(truncatingIfNeeded: x)
    }
    return bytes
}
