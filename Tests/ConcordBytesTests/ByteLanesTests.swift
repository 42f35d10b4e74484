import ConcordBytes
import Testing

/// The byte-lane tests against their byte-by-byte definitions, for every byte value in every lane.
@Suite struct ByteLanesTests {
    static func plain(_ c: UInt8) -> Bool { c >= 0x20 && c <= 0x7E && c != 0x22 && c != 0x5C }

    /// `notPlainASCII` over `start..<end` of a run whose bytes before `start` are plain: every byte
    /// value at every position of the range, for ranges of every length up to 20 and every start.
    @Test func aRangeIsFlaggedExactlyWhenOneOfItsBytesIsNotPlain() {
        for end in 0...20 {
            for start in 0...end {
                var run = [UInt8](repeating: UInt8(ascii: "a"), count: end)
                #expect(run.withUnsafeBufferPointer { ByteLanes.notPlainASCII($0.baseAddress ?? UnsafePointer(bitPattern: 8)!, from: start, to: end) } == 0)
                for at in start..<end {
                    for c in 0...255 {
                        run[at] = UInt8(c)
                        let flags = run.withUnsafeBufferPointer { ByteLanes.notPlainASCII($0.baseAddress!, from: start, to: end) }
                        if (flags != 0) != !Self.plain(UInt8(c)) { Issue.record("\(start)..<\(end), byte \(c) at \(at)") }
                    }
                    run[at] = UInt8(ascii: "a")
                }
            }
        }
    }

    /// A chain of `within(raised:_:_:)` tests masked once agrees with `within` in every lane, for
    /// every byte value and bounds around the ones the validators use.
    @Test(arguments: [(0x2D, 0x2D), (0x30, 0x39), (0x41, 0x46), (0x61, 0x7A), (0x5F, 0x5F), (0x20, 0x7E)] as [(UInt64, UInt64)])
    func raisedRangesAgreeWithWithin(_ first: UInt64, _ last: UInt64) {
        for lane in 0..<8 {
            for c in UInt64(0)...0x7F {
                let w = (0x4141_4141_4141_4141 as UInt64) & ~(0xFF << (8 * lane)) | c << (8 * lane)
                let chained = ByteLanes.within(raised: w | ByteLanes.high, first, last) & ByteLanes.high
                if chained != ByteLanes.within(w, first, last) { Issue.record("lane \(lane), byte \(c)") }
                let inRange = (chained >> (8 * lane + 7)) & 1 == 1
                if inRange != (c >= first && c <= last) { Issue.record("lane \(lane), byte \(c): \(inRange)") }
            }
        }
    }
}
