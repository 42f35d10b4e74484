import ConcordBytes
import Testing

/// One step of building an answer buffer.
enum AnswerStep: Sendable, CustomTestStringConvertible {
    case appendBytes(String)
    case appendOther(Int)
    case setBytes(Int, String)
    case setOther(Int, Int)
    /// Answers (index, bytes) written in place, with room for exactly their bytes.
    case write([(Int, String)])

    var testDescription: String {
        switch self {
        case .appendBytes(let s): "append \"\(s)\""
        case .appendOther(let o): "append \(o)"
        case .setBytes(let i, let s): "set \(i) \"\(s)\""
        case .setOther(let i, let o): "set \(i) \(o)"
        case .write(let items): "write \(items.map { "\($0.0):\"\($0.1)\"" }.joined(separator: " "))"
        }
    }
}

/// What a buffer says of each answer: its bytes as a string, or its other value.
enum Expected: Equatable, Sendable {
    case bytes(String)
    case other(Int)
}

func read(_ buffer: AnswerBuffer<Int>) -> [Expected] {
    buffer.indices.map { i in
        switch buffer[i] {
        case .bytes(let range):
            let viaRange = String(decoding: buffer.bytes[range], as: UTF8.self)
            let viaPointer = buffer.withBytes(at: i) { String(decoding: $0, as: UTF8.self) }
            #expect(viaPointer == viaRange)
            return .bytes(viaRange)
        case .other(let o):
            #expect(buffer.withBytes(at: i) { _ in 0 } == nil)
            return .other(o)
        }
    }
}

/// Appending, replacing and writing in place, each after the others: every answer reads back as
/// its last value, bytes from earlier answers untouched by later ones (empty answers too).
@Test(arguments: [
    ("nothing", 0, [], []),
    ("appended bytes and others in order", 0,
     [.appendBytes("abc"), .appendOther(7), .appendBytes(""), .appendBytes("é/L0/001")],
     [.bytes("abc"), .other(7), .bytes(""), .bytes("é/L0/001")]),
    ("others replaced by bytes", 3,
     [.setBytes(1, "one"), .setBytes(0, "zero")],
     [.bytes("zero"), .bytes("one"), .other(-1)]),
    ("bytes replaced by an other and by other bytes", 0,
     [.appendBytes("a"), .appendBytes("b"), .setOther(0, 5), .setBytes(1, "bb")],
     [.other(5), .bytes("bb")]),
    ("written in place, some left as they were", 4,
     [.write([(0, "first"), (2, ""), (3, "fourth")])],
     [.bytes("first"), .other(-1), .bytes(""), .bytes("fourth")]),
    ("written with no room at all", 2,
     [.write([(1, "")])],
     [.other(-1), .bytes("")]),
    ("written after appended bytes, which stay", 0,
     [.appendBytes("kept"), .appendOther(1), .appendOther(2), .write([(2, "new")]), .appendBytes("after")],
     [.bytes("kept"), .other(1), .bytes("new"), .bytes("after")]),
    ("two writes", 2,
     [.write([(0, "x")]), .write([(1, "yy")])],
     [.bytes("x"), .bytes("yy")]),
] as [(String, Int, [AnswerStep], [Expected])])
func anAnswerBufferReadsBackWhatWasPutInIt(_ name: String, _ placeholders: Int, _ steps: [AnswerStep], _ expected: [Expected]) {
    var buffer = AnswerBuffer<Int>(repeating: -1, count: placeholders)
    for step in steps {
        switch step {
        case .appendBytes(let s): buffer.append(bytes: s.utf8)
        case .appendOther(let o): buffer.append(o)
        case .setBytes(let i, let s): buffer.set(i, bytes: Array(s.utf8))
        case .setOther(let i, let o): buffer.set(i, o)
        case .write(let items):
            let capacity = items.reduce(0) { $0 + $1.1.utf8.count }
            buffer.write(capacity: capacity) { out in
                for (i, s) in items {
                    out.set(i) { at in
                        let utf8 = Array(s.utf8)
                        at.update(from: utf8, count: utf8.count)
                        return utf8.count
                    }
                }
                #expect(out.room == 0, "\(name)")
            }
        }
    }
    #expect(buffer.count == expected.count, "\(name)")
    #expect(read(buffer) == expected, "\(name)")
}

/// `mapOthers` changes the others only: the bytes answers read the same, from the same bytes.
@Test func mappingTheOthersKeepsTheBytes() {
    var buffer = AnswerBuffer<Int>()
    buffer.append(bytes: "a".utf8)
    buffer.append(3)
    buffer.append(bytes: "bc".utf8)
    buffer.append(4)
    let mapped = buffer.mapOthers { "#\($0)" }
    #expect(mapped.bytes == buffer.bytes)
    #expect(Array(mapped) == [.bytes(0..<1), .other("#3"), .bytes(1..<3), .other("#4")])
    #expect(Array(AnswerBuffer(others: [1, 2]).mapOthers { $0 * 10 }) == [.other(10), .other(20)])
}

/// A writer's word that its bytes are plain ASCII holds until bytes are added another way; the
/// others' mapping keeps it.
@Test func plainnessVouchedForLastsUntilOtherBytesCome() {
    var buffer = AnswerBuffer<Int>(repeating: 0, count: 3)
    #expect(!buffer.bytesArePlainASCII)
    buffer.write(capacity: 2) { out in out.set(0) { $0[0] = 0x61; $0[1] = 0x62; return 2 } }
    #expect(!buffer.bytesArePlainASCII)   // a write alone vouches for nothing
    buffer.vouchPlainASCII()
    #expect(buffer.bytesArePlainASCII)
    buffer.set(1, 7)
    #expect(buffer.bytesArePlainASCII && buffer.mapOthers { $0 + 1 }.bytesArePlainASCII)
    var set = buffer
    set.set(2, bytes: "\"".utf8)
    #expect(!set.bytesArePlainASCII)
    var appended = buffer
    appended.append(bytes: "c".utf8)
    #expect(!appended.bytesArePlainASCII)
    var rewritten = buffer
    rewritten.write(capacity: 1) { out in out.set(2) { $0[0] = 0x63; return 1 } }
    #expect(!rewritten.bytesArePlainASCII)
}
