#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A property of the parser under test does not hold: says which, then aborts. libFuzzer
/// treats the abort as a crash and writes the input to `crash-<sha1>` (Fuzz/run keeps it).
public func propertyFailed(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let text = "PROPERTY FAILED (\(file):\(line)): \(message())\n"
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
    abort()
}

/// `propertyFailed` unless `condition` holds.
@inline(__always)
public func check(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { propertyFailed(message(), file: file, line: line) }
}

/// The input bytes of one libFuzzer call as an array (nil pointer when the input is empty).
public func inputBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Bytes shown escaped, for failure messages.
public func describe(_ bytes: some Sequence<UInt8>) -> String {
    var s = ""
    for b in bytes {
        if b >= 0x20 && b < 0x7F && b != 0x5C { s.unicodeScalars.append(Unicode.Scalar(b)) } else { s += "\\x" + String(b, radix: 16) }
    }
    return s
}
