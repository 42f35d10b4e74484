/// Finds the elements of a body shaped `{"<name>": [{…}, {…}, …], …}` — an object whose members
/// are arrays of objects, each named one of `names` at most once — without building its tree: each
/// element's byte range, for the caller to parse one at a time. Parsed whole, a library manifest's
/// tree is several times its text (the `PUT` of 300 000 assets, a 53 MiB body, peaked 99 MiB
/// higher that way, docs/benchmarks.md); one element's tree is a few hundred bytes.
///
/// Only the extents are found here: an element's contents are checked by parsing it. Anything
/// else — another member, a name twice, a member that is not an array, an element that is not an
/// object or nests deeper than `maxElementDepth`, a member name with an escape or a control
/// character — gives nil: the caller then parses the body whole, which decides what it means and
/// words any error exactly as for every other body.
///
/// When every element then parses, the body is well-formed JSON: outside the elements this scanner
/// has read every token itself, and a well-formed element's brackets match within its range.
public enum ObjectArraysScanner {
    /// Each name's elements (byte ranges of `body`, in document order), in the order of `names`;
    /// nil for a name the body does not have.
    public static func scan(_ body: [UInt8], names: [String], maxElementDepth: Int = 4) -> [[Range<Int>]?]? {
        let wanted = names.map { Array($0.utf8) }
        return body.withUnsafeBufferPointer { b -> [[Range<Int>]?]? in
            var found = [[Range<Int>]?](repeating: nil, count: wanted.count)
            var s = ByteScanner(b)
            let n = b.count
            /// A member name without escapes: which of `wanted` it is.
            func name() -> Int? {
                let start = s.index
                var i = start
                while i < n, b[i] != UInt8(ascii: "\"") {
                    if b[i] == UInt8(ascii: "\\") || b[i] < 0x20 { return nil }
                    i += 1
                }
                guard i < n else { return nil }
                let key = UnsafeBufferPointer(rebasing: b[start..<i])
                s.index = i + 1
                return wanted.firstIndex { $0.elementsEqual(key) }
            }
            /// The object starting at the scanner's position: its extent, by matching brackets outside strings.
            func element() -> Range<Int>? {
                let start = s.index
                var i = start
                var depth = 0
                while i < n {
                    switch b[i] {
                    case UInt8(ascii: "\""):
                        i += 1
                        while i < n, b[i] != UInt8(ascii: "\"") { i += b[i] == UInt8(ascii: "\\") ? 2 : 1 }
                        guard i < n else { return nil }
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                        guard depth <= maxElementDepth else { return nil }
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            s.index = i + 1
                            return start..<s.index
                        }
                    default:
                        break
                    }
                    i += 1
                }
                return nil
            }
            guard s.take(UInt8(ascii: "{")) else { return nil }
            if !s.take(UInt8(ascii: "}")) {
                repeat {
                    guard s.take(UInt8(ascii: "\"")), let k = name(), found[k] == nil,
                          s.take(UInt8(ascii: ":")), s.take(UInt8(ascii: "[")) else { return nil }
                    var elements: [Range<Int>] = []
                    if !s.take(UInt8(ascii: "]")) {
                        repeat {
                            s.skipSpace()
                            guard !s.atEnd, b[s.index] == UInt8(ascii: "{"), let range = element() else { return nil }
                            elements.append(range)
                        } while s.take(UInt8(ascii: ","))
                        guard s.take(UInt8(ascii: "]")) else { return nil }
                    }
                    found[k] = elements
                } while s.take(UInt8(ascii: ","))
                guard s.take(UInt8(ascii: "}")) else { return nil }
            }
            s.skipSpace()
            return s.atEnd ? found : nil
        }
    }
}
