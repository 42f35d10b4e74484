#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordSHA256

/// SHA-256 (FIPS 180-4): the package's one implementation, shared with the client.
public typealias SHA256 = ConcordSHA256.SHA256

/// HMAC-SHA-256 (RFC 2104).
public enum HMACSHA256 {
    public static func authenticate(_ message: some Sequence<UInt8>, key: [UInt8]) -> [UInt8] {
        var k = key.count > 64 ? SHA256.hash(key) : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        var inner = SHA256()
        inner.update(k.map { $0 ^ 0x36 })
        inner.update(message)
        let innerDigest = inner.finalize()
        var outer = SHA256()
        outer.update(k.map { $0 ^ 0x5c })
        outer.update(innerDigest)
        return outer.finalize()
    }
}

/// Secure randomness, token hashing and comparison.
public enum Secrets {
    /// `count` bytes from the OS's secure generator (`/dev/urandom`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        // Glibc's Swift overlay does not export getrandom(2) (and syscall is variadic), so read the
        // kernel's CSPRNG through /dev/urandom, which never blocks once the pool is seeded.
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            while filled < count {
                let n = out.withUnsafeMutableBytes { buf -> Int in
                    guard let base = buf.baseAddress else { return 0 }
                    return read(fd, base + filled, count - filled)
                }
                if n > 0 { filled += n } else if n < 0 && errno == EINTR { continue } else { break }
            }
        }
        if filled < count {
            // No /dev/urandom (a chroot): the stdlib's generator, which is getrandom(2) on Linux.
            var rng = SystemRandomNumberGenerator()
            for i in filled..<count { out[i] = rng.next() }
        }
        return out
    }

    /// A new bearer token: `prefix` + base64url of 32 random bytes (256 bits).
    public static func newToken(prefix: String) -> String {
        prefix + Base64URL.encode(self.randomBytes(32))
    }

    /// What is stored for a token: its SHA-256.
    public static func tokenHash(_ token: String) -> [UInt8] { SHA256.hash(token.utf8) }

    /// Compares without an early exit, so timing does not reveal the common prefix.
    public static func constantTimeEquals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}

/// base64url without padding (RFC 4648 §5). Both ways work on the UTF-8 bytes directly, four
/// characters for three bytes at a time: PostgreSQL stores each fingerprint as the bytes it encodes
/// and every mapping write and read converts a batch of them.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's 6-bit value, 0xFF for a byte outside the alphabet.
    private static let values: [UInt8] = (0..<256).map { Identifiers.base64urlValue(UInt8($0)) ?? 0xFF }

    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { self.encode(UnsafeRawBufferPointer($0)) }
    }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = self.encodedCount(bytes.count)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length) { self.encode(bytes, into: $0) }
    }

    /// How many characters `count` bytes encode to (no padding).
    public static func encodedCount(_ count: Int) -> Int {
        count / 3 * 4 + (count % 3 == 0 ? 0 : count % 3 + 1)
    }

    /// Writes the encoding of `bytes` at the start of `out`, which holds at least
    /// `encodedCount(bytes.count)` bytes; returns that count. For a caller that spells the text
    /// into a buffer of its own rather than a `String`.
    @discardableResult
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let n = bytes.count, length = self.encodedCount(n)
        precondition(out.count >= length, "base64url: the output buffer is too small")
        self.alphabet.withUnsafeBufferPointer { a in
            var i = 0, o = 0
            while i + 3 <= n {
                let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = a[Int(v >> 18 & 63)]; out[o + 1] = a[Int(v >> 12 & 63)]
                out[o + 2] = a[Int(v >> 6 & 63)]; out[o + 3] = a[Int(v & 63)]
                i += 3; o += 4
            }
            if n - i == 1 {
                let v = UInt32(bytes[i]) << 16
                out[o] = a[Int(v >> 18 & 63)]; out[o + 1] = a[Int(v >> 12 & 63)]
            } else if n - i == 2 {
                let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
                out[o] = a[Int(v >> 18 & 63)]; out[o + 1] = a[Int(v >> 12 & 63)]; out[o + 2] = a[Int(v >> 6 & 63)]
            }
        }
        return length
    }

    /// Decodes canonical base64url without padding; nil on any other input.
    public static func decode(_ s: String) -> [UInt8]? {
        var s = s
        return s.withUTF8 { self.decode(UnsafeRawBufferPointer($0)) }
    }

    /// `decode` of text given as its UTF-8 bytes. Canonical: no padding, no length of 4k + 1, and
    /// the unused low bits of the last character zero — exactly the texts `encode` writes.
    public static func decode(_ chars: UnsafeRawBufferPointer) -> [UInt8]? {
        let m = chars.count
        guard m % 4 != 1 else { return nil }
        let count = m / 4 * 3 + (m % 4 == 0 ? 0 : m % 4 - 1)
        return self.values.withUnsafeBufferPointer { t -> [UInt8]? in
            var bad: UInt8 = 0
            let out = [UInt8](unsafeUninitializedCapacity: count) { out, written in
                var i = 0, o = 0
                while i + 4 <= m {
                    let a = t[Int(chars[i])], b = t[Int(chars[i + 1])], c = t[Int(chars[i + 2])], d = t[Int(chars[i + 3])]
                    bad |= a | b | c | d   // 0xFF sets bits 6 and 7, which no value has
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[o] = UInt8(truncatingIfNeeded: v >> 16); out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4; o += 3
                }
                switch m - i {
                case 2:
                    let a = t[Int(chars[i])], b = t[Int(chars[i + 1])]
                    bad |= a | b
                    if b & 0x0F != 0 { bad |= 0xC0 }   // leftover bits: not canonical
                    out[o] = UInt8(truncatingIfNeeded: UInt32(a) << 2 | UInt32(b) >> 4)
                case 3:
                    let a = t[Int(chars[i])], b = t[Int(chars[i + 1])], c = t[Int(chars[i + 2])]
                    bad |= a | b | c
                    if c & 0x03 != 0 { bad |= 0xC0 }
                    let v = UInt32(a) << 12 | UInt32(b) << 6 | UInt32(c)
                    out[o] = UInt8(truncatingIfNeeded: v >> 10); out[o + 1] = UInt8(truncatingIfNeeded: v >> 2)
                default: break
                }
                written = count
            }
            return bad & 0xC0 == 0 ? out : nil
        }
    }
}

/// Hex rendering, for tests and logs.
public enum Hex {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
