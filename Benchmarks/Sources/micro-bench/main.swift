// In-process timings that used to be asserted in `swift test` (which now counts operations
// instead of timing them): linear work that a regression would make quadratic.
//
//   micro-bench [--rounds 5] [--markdown]
//
// Each case runs `rounds` times; the figure is the median thread CPU time of one run (release
// build). The last column is the wall-clock bound the debug test used to assert, for scale.
import ConcordDomain
import ConcordHTTP
import Foundation

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

let rounds = max(1, Int(option("--rounds") ?? "5") ?? 5)
let markdown = CommandLine.arguments.contains("--markdown")

func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Median CPU seconds of `body` over `rounds` runs; `body` returns a value checked once.
func measure(_ body: () -> Bool) -> Double {
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = threadCPUSeconds()
        guard body() else {
            FileHandle.standardError.write(Data("micro-bench: a case gave a wrong result\n".utf8))
            exit(1)
        }
        samples.append(threadCPUSeconds() - start)
    }
    return samples.sorted()[samples.count / 2]
}

// ChangeDetails: 2 × 100 000 identifiers appended through the per-type subscript, in place
// (a copy per append made a 16 000-asset PUT take tens of seconds).
let identifiers = (0..<100_000).map { "asset-\($0)" }
let changeDetails = measure {
    var details = ChangeDetails()
    for id in identifiers {
        details[.asset].inserted.append(id)
        details[.collectionList].deleted.append(id)
    }
    return details.assets.inserted.count == 100_000 && details.collectionLists.deleted.count == 100_000
}

// HTTP parser: a 16 KB header fed one byte at a time, `next()` after each (a parser rescanning
// from the line start would do ~10^8 steps).
var headerText = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "v", count: 12_000) + "\r\n"
for i in 0..<100 { headerText += "X-\(i): \(i)\r\n" }
headerText += "\r\n"
let headerBytes = Array(headerText.utf8)
let byteByByte = measure {
    var parser = HTTPRequestParser()
    var events = 0
    for byte in headerBytes {
        parser.append([byte])
        while let _ = try? parser.next() { events += 1 }
    }
    return events == 2
}

// HTTP parser: a megabyte of garbage lines, refused at the first.
var garbage: [UInt8] = []
for i in 0..<(1 << 20) { garbage.append(i % 61 == 60 ? 0x0A : UInt8(0x21 + i % 90)) }
let garbageLines = measure {
    var parser = HTTPRequestParser()
    parser.append(garbage)
    do throws(HTTPParseError) {
        while try parser.next() != nil {}
        return false
    } catch {
        return error.status == 400
    }
}

let rows: [(String, Double, String)] = [
    ("ChangeDetails: append 2 × 100 000 identifiers through the subscript", changeDetails, "20 s"),
    ("HTTP parser: 16 KB header fed byte by byte", byteByByte, "3 s"),
    ("HTTP parser: 1 MiB of garbage lines, refused", garbageLines, "1 s"),
]
if markdown {
    print("| case | CPU per run (median of \(rounds)) | bound once asserted in `swift test` (debug, wall clock) |")
    print("|---|---|---|")
    for (name, seconds, bound) in rows { print("| \(name) | \(String(format: "%.2f", seconds * 1000)) ms | \(bound) |") }
} else {
    for (name, seconds, _) in rows { print("\(name): \(String(format: "%.2f", seconds * 1000)) ms") }
}
