import Foundation
import Testing

@testable import ConcordClient

private let guid = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
private let fp = "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"

@Test(arguments: [
    // (string, well formed, type, fingerprint)
    ("\(guid):001:\(fp)", true, CloudObjectType.asset, fp),
    ("\(guid.lowercased()):040:", true, .assetCollection, ""),
    ("\(guid):020:abc", true, .collectionList, "abc"),
    ("\(guid):002:\(fp)", false, nil, nil),              // unknown type code
    ("\(guid):001", false, nil, nil),                     // two parts
    ("not-a-guid-at-all-but-36-characters:001:x", false, nil, nil),
    ("\(guid):001:a+b", false, nil, nil),                 // not base64url
    ("\(guid):001:\(fp):extra", false, nil, nil),         // ':' is not base64url
    ("", false, nil, nil),
] as [(String, Bool, CloudObjectType?, String?)])
func cloudIdentifierParsesPhotoKitLayout(_ text: String, _ wellFormed: Bool, _ type: CloudObjectType?, _ fingerprint: String?) {
    let id = CloudIdentifier(stringValue: text)
    #expect(id.stringValue == text)
    #expect(id.isWellFormed == wellFormed)
    #expect(id.objectType == type)
    #expect(id.fingerprint == fingerprint)
    #expect((id.guid != nil) == wellFormed)
}

@Test func cloudIdentifierSameRecordIgnoresCaseAndFingerprint() throws {
    let a = CloudIdentifier(stringValue: "\(guid):040:\(fp)")
    let b = CloudIdentifier(stringValue: "\(guid.lowercased()):040:")
    let c = CloudIdentifier(stringValue: "\(guid):001:\(fp)")
    #expect(a.isSameRecord(as: b) && !a.isSameRecord(as: c) && a != b)
    let built = CloudIdentifier(guid: try #require(UUID(uuidString: guid.lowercased())), type: .asset, fingerprint: fp)
    #expect(built.stringValue == "\(guid):001:\(fp)")
    // Codable as the bare string the API carries.
    let data = try JSONEncoder().encode([built])
    #expect(String(decoding: data, as: UTF8.self) == #"["\#(guid):001:\#(fp)"]"#)
    #expect(try JSONDecoder().decode([CloudIdentifier].self, from: data) == [built])
}

@Test(arguments: [
    // (bytes, base64url)
    ([UInt8](), ""),
    ([0xFB, 0xFF], "-_8"),
    ([0x00, 0x01, 0x02], "AAEC"),
    (Array("hello world!".utf8), "aGVsbG8gd29ybGQh"),
])
func fingerprintIsBase64URLWithoutPadding(_ bytes: [UInt8], _ expected: String) {
    #expect(Fingerprint.base64URL(bytes) == expected)
}

@Test(arguments: [
    // (retry, Retry-After, random, expected delay)
    (1, nil, 0.0, 0.125),        // first retry: d = 0.25, equal jitter [d/2, d]
    (1, nil, 1.0, 0.25),
    (2, nil, 0.5, 0.375),        // d = 0.5
    (3, nil, 0.0, 0.5),          // d = 1
    (1, 0.0, 0.7, 0.0),          // Retry-After honoured exactly
    (2, 1.0, 0.0, 1.0),
    (3, 30.0, 0.0, 30.0),        // at the bound
    (1, 31.0, 0.0, nil),         // longer than maxRetryAfter: thrown
    (4, nil, 0.0, nil),          // attempts spent (4 in all: 3 retries)
    (4, 0.0, 0.0, nil),
    (0, nil, 0.0, nil),
] as [(Int, Double?, Double, Double?)])
func retryDelayBacksOffWithJitterAndHonoursRetryAfter(_ retry: Int, _ retryAfter: Double?, _ random: Double, _ expected: Double?) {
    #expect(RetryPolicy.standard.delay(beforeRetry: retry, retryAfter: retryAfter, random: random) == expected)
}

@Test func retryDelayIsCappedByMaxDelay() {
    let policy = RetryPolicy(maxAttempts: 20, initialDelay: 1, multiplier: 3, maxDelay: 5)
    #expect(policy.delay(beforeRetry: 10, retryAfter: nil, random: 1) == 5)
    #expect(policy.delay(beforeRetry: 10, retryAfter: nil, random: 0) == 2.5)
    #expect(RetryPolicy.never.delay(beforeRetry: 1, retryAfter: 0, random: 0) == nil)
}

@Test(arguments: [
    // (header, seconds from the fixed now)
    ("0", 0.0),
    ("7", 7.0),
    (" 120 ", 120.0),
    ("Sun, 06 Nov 1994 08:49:47 GMT", 10.0),   // IMF-fixdate
    ("Sunday, 06-Nov-94 08:50:37 GMT", 60.0),  // RFC 850
    ("Sun Nov  6 08:49:38 1994", 1.0),         // asctime
    ("Sun, 06 Nov 1994 08:00:00 GMT", 0.0),    // in the past: now
    ("-1", nil),
    ("soon", nil),
    ("", nil),
] as [(String, Double?)])
func retryAfterReadsSecondsAndHTTPDates(_ header: String, _ expected: Double?) {
    let now = Date(timeIntervalSince1970: 784_111_777)   // Sun, 06 Nov 1994 08:49:37 GMT
    #expect(RetryAfter.seconds(header, now: now) == expected)
}

@Test(arguments: [
    // (count, size, chunk sizes)
    (0, 5, [Int]()),
    (12, 5, [5, 5, 2]),
    (10, 5, [5, 5]),
    (3, 10_000, [3]),
    (4, 0, [1, 1, 1, 1]),   // a nonsense size still makes progress
])
func batchesSplitInOrder(_ count: Int, _ size: Int, _ expected: [Int]) {
    let chunks = ConcordClient.chunks(Array(0..<count), size: size)
    #expect(chunks.map(\.count) == expected)
    #expect(chunks.flatMap { $0 } == Array(0..<count))
}

@Test func errorAnswersBecomeTypedErrors() throws {
    let batch = errorFromResponse(
        status: 413, body: Data(#"{"error":{"name":"batchTooLarge","message":"At most 5.","maxBatch":5}}"#.utf8), retryAfter: nil)
    let e = try #require(batch as? ConcordError)
    #expect(e.status == 413 && e.name == "batchTooLarge" && e.maxBatch == 5 && e.message == "At most 5." && e.details["maxBatch"] == .number(5))

    let version = try #require(errorFromResponse(
        status: 412, body: Data(#"{"error":{"name":"versionMismatch","message":"m","version":"v7"}}"#.utf8), retryAfter: nil) as? ConcordError)
    #expect(version.version == "v7")
    let field = try #require(errorFromResponse(
        status: 400, body: Data(#"{"error":{"name":"badRequest","message":"m","field":"name"}}"#.utf8), retryAfter: nil) as? ConcordError)
    #expect(field.field == "name")

    let expired = try #require(errorFromResponse(
        status: 410, body: Data(#"{"error":{"name":"persistentChangeTokenExpired","message":"m","domain":"PHPhotosErrorDomain","code":3105}}"#.utf8),
        retryAfter: nil) as? ConcordPhotosError)
    #expect(expired.code == .persistentChangeTokenExpired && expired.status == 410)
    let bridged = expired as NSError
    #expect(bridged.domain == "PHPhotosErrorDomain" && bridged.code == 3105)

    let html = try #require(errorFromResponse(status: 502, body: Data("<html>bad gateway</html>".utf8), retryAfter: 3) as? ConcordError)
    #expect(html.status == 502 && html.name == "invalidResponse" && html.retryAfter == 3)
}

@Test(arguments: [
    (0.0, "1970-01-01T00:00:00Z"),
    (1_700_000_000.0, "2023-11-14T22:13:20Z"),
    (1_700_000_000.25, "2023-11-14T22:13:20.250Z"),
])
func datesTravelAsRFC3339(_ seconds: Double, _ text: String) {
    let date = Date(timeIntervalSince1970: seconds)
    #expect(RFC3339.string(from: date) == text)
    #expect(RFC3339.date(from: text) == date)
}

@Test func rfc3339ReadsOffsets() {
    #expect(RFC3339.date(from: "2023-11-14T23:13:20+01:00") == Date(timeIntervalSince1970: 1_700_000_000))
    #expect(RFC3339.date(from: "yesterday") == nil)
}
