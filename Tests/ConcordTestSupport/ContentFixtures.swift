import ConcordDomain
import ConcordSHA256

// Synthetic photo content the suites share: the same number is the same content in every suite.

/// The canonical fingerprint (base64url SHA-256) of the bytes "content-<n>".
public func contentFingerprint(_ n: Int) -> String {
    Base64URL.encode(SHA256.hash(Array("content-\(n)".utf8)))
}

/// 32 bytes standing for the content numbered `n` (xorshift from a multiplicative hash of `n`):
/// distinct per number, no hashing needed.
public func contentBytes(_ n: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 32)
    var x = UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    for i in 0..<32 {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        bytes[i] = UInt8(truncatingIfNeeded: x)
    }
    return bytes
}
