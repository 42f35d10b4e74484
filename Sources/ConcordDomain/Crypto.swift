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

/// base64url without padding (RFC 4648 §5).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(self.alphabet[Int(v >> 18 & 63)]); out.append(self.alphabet[Int(v >> 12 & 63)])
            out.append(self.alphabet[Int(v >> 6 & 63)]); out.append(self.alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(self.alphabet[Int(v >> 18 & 63)]); out.append(self.alphabet[Int(v >> 12 & 63)])
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(self.alphabet[Int(v >> 18 & 63)]); out.append(self.alphabet[Int(v >> 12 & 63)])
            out.append(self.alphabet[Int(v >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical base64url without padding; nil on any other input.
    public static func decode(_ s: String) -> [UInt8]? {
        let chars = Array(s.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = Identifiers.base64urlValue(c) else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        guard acc == 0 else { return nil }   // non-zero leftover bits: not canonical
        return out
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
