import ConcordDomain
import FuzzSupport

// The cloud-identifier parser `CloudIdentifier(parsing:)` (bytes, as the batch runs it, and
// String), `Identifiers.normalizedUUID`, `Identifiers.isValidFingerprint` and
// `PhotoKitCloudIdentifier.keyPart`, on arbitrary bytes. Each input checks:
//  - the byte and String entry points agree (on valid UTF-8);
//  - each accepts exactly what a plain reading of the API accepts (a reference written
//    here byte by byte, no SWAR, no fixed offsets);
//  - a parsed identifier re-serialises to the canonical form (GUID upper-cased, the rest as
//    sent) and re-parses equal; keyPart returns A for its own type code and nil for the others.

func isHex(_ c: UInt8) -> Bool {
    (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

func referenceUUID(_ b: ArraySlice<UInt8>) -> [UInt8]? {
    let groups = b.split(separator: 0x2D, omittingEmptySubsequences: false)
    guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy({ $0.allSatisfy(isHex) }) else { return nil }
    return b.map { $0 >= 0x61 && $0 <= 0x66 ? $0 - 32 : $0 }
}

func referenceFingerprint(_ b: ArraySlice<UInt8>) -> Bool {
    // base64url without padding of 16–64 bytes: 22–86 characters, never 1 more than a multiple of 4.
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    return b.count >= 22 && b.count <= 86 && b.count % 4 != 1 && b.allSatisfy(alphabet.contains)
}

/// `<GUID>:<type>:<fingerprint>`; the canonical bytes when well formed.
func referenceCloud(_ b: [UInt8]) -> [UInt8]? {
    let parts = b.split(separator: 0x3A, omittingEmptySubsequences: false)
    guard parts.count == 3, let guid = referenceUUID(parts[0]),
          ["001", "040", "020"].contains(String(decoding: parts[1], as: UTF8.self)),
          parts[2].isEmpty || referenceFingerprint(parts[2]) else { return nil }
    return guid + [0x3A] + Array(parts[1]) + [0x3A] + Array(parts[2])
}

func referenceKeyPart(_ b: [UInt8], type: ObjectType) -> String? {
    let parts = b.split(separator: 0x3A, omittingEmptySubsequences: false)
    guard parts.count == 3 else { return nil }
    let a = parts[0], c = parts[1], h = parts[2]
    guard a.count >= 1, a.count <= 128, h.count <= 128,
          a.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }), h.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }),
          String(decoding: c, as: UTF8.self) == type.code else { return nil }
    return String(decoding: a, as: UTF8.self)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCloudID(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = inputBytes(data, size)
    let fromBytes = input.withUnsafeBufferPointer { CloudIdentifier(parsing: $0) }
    let s = String(decoding: input, as: UTF8.self)
    let validUTF8 = Array(s.utf8) == input
    if validUTF8 {
        check(CloudIdentifier(parsing: s) == fromBytes, "String and byte parsers disagree")
    }
    let reference = referenceCloud(input)
    check((fromBytes != nil) == (reference != nil), "parser says \(fromBytes != nil), reference \(reference != nil): \(describe(input))")
    if let c = fromBytes, let reference {
        let canonical = c.stringValue
        check(Array(canonical.utf8) == reference, "canonical form \(canonical) vs \(describe(reference))")
        check(CloudIdentifier(parsing: canonical) == c, "canonical form does not re-parse equal: \(canonical)")
        check(c.guid == c.guid.uppercased() && c.guid.utf8.count == 36, "GUID not upper case: \(c.guid)")
    }

    // The GUID and fingerprint parts alone.
    let uuid = Identifiers.normalizedUUID(s)
    let uuidReference = validUTF8 ? referenceUUID(input[...]) : nil
    if validUTF8 {
        check(uuid.map { Array($0.utf8) } == uuidReference, "normalizedUUID \(String(describing: uuid)) of \(describe(input))")
    }
    if validUTF8 {
        check(Identifiers.isValidFingerprint(s) == referenceFingerprint(input[...]), "isValidFingerprint(\(describe(input)))")
    }

    // photoKitCloudIdentifier: A for its own type only.
    var matches = 0
    for type in ObjectType.allCases {
        let a = PhotoKitCloudIdentifier.keyPart(s, type: type)
        let expected = referenceKeyPart(Array(s.utf8), type: type)
        check(a == expected, "keyPart(\(describe(s.utf8)), \(type)) = \(String(describing: a)), expected \(String(describing: expected))")
        if a != nil { matches += 1 }
    }
    check(matches <= 1, "keyPart accepted for \(matches) types")
    return 0
}

// The entry point SwiftPM links as `main` (see FuzzSupport's runFuzzer).
@_cdecl("fuzz_cloudid_main")
func fuzzMain(_ argc: Int32, _ argv: FuzzArguments) -> Int32 { runFuzzer(argc, argv, testOneInput: fuzzCloudID) }
