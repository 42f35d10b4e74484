import ConcordBytes
import ConcordDomain
import CSQLite
import Foundation

/// SQLite stores record GUIDs and fingerprints in their binary form (migration 11, docs/scaling.md
/// "Storage layout and database size"): an upper-case UUID as its 16 bytes instead of 36
/// characters, a base64url fingerprint as the bytes it encodes (a SHA-256: 32 instead of 43), in
/// the rows and in every index that holds them. The columns stay `TEXT`; SQLite keeps a BLOB value
/// in them as it is.
///
/// The mapping is one-to-one on the strings it converts, and leaves every other string as text, so
/// equality in SQL is equality of the strings: two strings are equal exactly when their stored
/// values are. Reading turns a BLOB back into its text (`Statement.text`): 16 bytes are a GUID, any
/// other length a fingerprint, which is why a fingerprint that encodes exactly 16 bytes stays text.
/// Only canonical spellings convert (upper-case hex with the four dashes; base64url without
/// padding whose unused low bits are zero), so the text read back is the text written.
enum CompactText {
    /// The stored form of `text`: its bytes when it converts, nil when it stays text.
    static func compact(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        if text.count == 36, let guid = Self.guidBytes(text) { return guid }
        return Self.fingerprintBytes(text)
    }

    static func compact(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { Self.compact($0) }
    }

    /// The text a stored BLOB stands for.
    static func expand(_ bytes: UnsafeRawBufferPointer) -> String {
        bytes.count == 16 ? Self.guidText(bytes) : Base64URL.encode(Array(bytes))
    }

    // MARK: - GUIDs

    /// The 16 bytes of an upper-case UUID `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`; nil for any other text.
    static func guidBytes(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        UUIDBits(bytes: text)?.bigEndianBytes
    }

    static func guidText(_ bytes: UnsafeRawBufferPointer) -> String {
        UUIDBits(bigEndianBytes: bytes).string
    }

    /// Writes the 36 characters of `guidText` at `out`; returns how many it wrote.
    static func writeGUIDText(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) -> Int {
        UUIDBits(bigEndianBytes: bytes).write(into: out)
        return 36
    }

    // MARK: - Fingerprints (base64url, no padding)

    /// The bytes a canonical unpadded base64url text encodes, unless they are 16 (a GUID's length)
    /// or none; nil for any other text.
    static func fingerprintBytes(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text.count * 3 / 4 != 16 else { return nil }
        return Base64URL.decode(String(decoding: text, as: UTF8.self))
    }

    // MARK: - In SQL

    /// Registers `concord_compact(x)` on the connection: the stored form of a text argument (a BLOB
    /// when it converts), any other argument unchanged. Deterministic, so SQLite may compute it
    /// once per outer row and use an index on the column it is compared with. Also
    /// `concord_date(x)`, the same for a date (`CompactDate`), which migration 14 uses.
    static func register(on db: OpaquePointer) -> Int32 {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        let dates = sqlite3_create_function_v2(db, "concord_date", 1, flags, nil, { context, _, arguments in
            guard let argument = arguments?[0] else { return sqlite3_result_null(context) }
            if sqlite3_value_type(argument) == SQLITE_TEXT, let text = sqlite3_value_text(argument),
               let seconds = CompactDate.seconds(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(argument))), as: UTF8.self)) {
                return CompactDate.blob(seconds).withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, 5, SQLITE_TRANSIENT_DESTRUCTOR) }
            }
            sqlite3_result_value(context, argument)
        }, nil, nil, nil)
        guard dates == SQLITE_OK else { return dates }
        return sqlite3_create_function_v2(db, "concord_compact", 1, flags, nil, { context, _, arguments in
            guard let argument = arguments?[0] else { return sqlite3_result_null(context) }
            if sqlite3_value_type(argument) == SQLITE_TEXT, let text = sqlite3_value_text(argument) {
                let count = Int(sqlite3_value_bytes(argument))
                if let bytes = CompactText.compact(UnsafeBufferPointer(start: text, count: count)) {
                    return bytes.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT_DESTRUCTOR) }
                }
            }
            sqlite3_result_value(context, argument)
        }, nil, nil, nil)
    }
}

extension SQLValue {
    /// A record GUID or fingerprint as SQLite stores it (`CompactText`).
    static func compact(_ text: String) -> SQLValue {
        CompactText.compact(text).map { .blob($0) } ?? .text(text)
    }
}

// MARK: - Dates and media types (migration 14)

/// SQLite also stores an object's dates and media type compactly (migration 14). The columns are
/// `TEXT`, which would turn an INTEGER into text, but keeps a BLOB as it is:
/// - a date written exactly as `YYYY-MM-DDTHH:MM:SSZ` (what clients send most) as its seconds since
///   1970 in a 5-byte big-endian BLOB instead of 20 characters; any other date stays text;
/// - the media type `image` (most of a library) as the empty text, which takes no bytes beyond the
///   record header; the others by name.
/// Reading tells them apart (`Statement.date`, `Statement.mediaType`); these columns are read only so.
enum CompactDate {
    /// The seconds of a date in the canonical form, whose formatting gives back exactly `text`; nil
    /// otherwise. Twenty bytes ending in `Z` hold no fraction and no offset; `T` and `Z` in upper
    /// case and no leap second are what `text(_:)` writes back.
    static func seconds(_ text: String) -> Int64? {
        let u = Array(text.utf8)
        guard u.count == 20, u[10] == UInt8(ascii: "T"), u[19] == UInt8(ascii: "Z"),
              !(u[17] == UInt8(ascii: "6") && u[18] == UInt8(ascii: "0")) else { return nil }
        return RFC3339.epochSecond(text)
    }

    /// `seconds` (from `seconds(_:)`) in the canonical form.
    static func text(_ seconds: Int64) -> String {
        RFC3339.format(Date(timeIntervalSince1970: Double(seconds)))
    }

    /// The 5-byte form of `seconds` (years 0001 to 9999 need 39 bits).
    static func blob(_ seconds: Int64) -> [UInt8] {
        (0..<5).map { UInt8(truncatingIfNeeded: seconds >> (8 * (4 - $0))) }
    }

    /// The seconds of a 5-byte form; nil for any other length.
    static func seconds(blob bytes: UnsafeRawBufferPointer) -> Int64? {
        guard bytes.count == 5 else { return nil }
        let value = bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return (value << 24) >> 24   // sign-extends bit 39
    }
}

extension SQLValue {
    /// A date as SQLite stores it (`CompactDate`).
    static func date(_ text: String?) -> SQLValue {
        guard let text else { return .null }
        return CompactDate.seconds(text).map { .blob(CompactDate.blob($0)) } ?? .text(text)
    }

    static func mediaType(_ type: MediaType) -> SQLValue {
        .text(type == .image ? "" : type.rawValue)
    }
}
