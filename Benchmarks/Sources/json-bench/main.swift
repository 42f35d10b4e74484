// In-process JSON benchmark: ConcordJSON's reader/writer against Foundation's
// JSONDecoder/JSONEncoder on the mapping route's real payloads.
//
//   json-bench [--items 1000] [--seconds 8] [--markdown]
//
// Each comparison runs Concord and Foundation in alternation (A B A B ...), every sample being a
// short inner loop timed in thread CPU time, so that noise from the shared machine hits both
// sides alike and time spent preempted does not count; the reported figure is the median
// per-batch time. Before timing, both sides are checked to produce the
// same values, so a fast but wrong codec cannot win.
import BenchSupport
import ConcordJSON
import Foundation

// MARK: - Options

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("json-bench: \(message)\n".utf8))
    exit(1)
}

let itemCount = Int(option("--items") ?? "1000") ?? 1000
let secondsBudget = Double(option("--seconds") ?? "8") ?? 8
let markdown = CommandLine.arguments.contains("--markdown")
guard itemCount > 0, secondsBudget > 0 else { fail("--items and --seconds must be positive") }

// MARK: - Fixtures

let localIdentifiers = Fixtures.localIdentifiers(count: itemCount)
let mappings = localIdentifiers.map {
    CloudIdentifierMapping(localIdentifier: $0, cloudIdentifier: Fixtures.cloudIdentifier(for: $0))
}
let requestBytes = Fixtures.requestBody(localIdentifiers: localIdentifiers)
let requestData = Data(requestBytes)
let foundationDecoder = JSONDecoder()   // reused: the cheapest way to use Foundation, so the fairest
let foundationEncoder = JSONEncoder()

// MARK: - The two sides of each comparison

/// Concord: bytes → JSONValue → the `[String]` the route needs.
func concordDecode(_ bytes: [UInt8]) throws -> [String] {
    guard case .object(let object) = try JSONValue.parse(bytes),
          case .array(let items)? = object["localIdentifiers"]
    else { throw DecodeFailure() }
    var identifiers: [String] = []
    identifiers.reserveCapacity(items.count)
    for item in items {
        guard case .string(let identifier) = item else { throw DecodeFailure() }
        identifiers.append(identifier)
    }
    return identifiers
}

struct DecodeFailure: Error {}

func foundationDecode(_ data: Data) throws -> [String] {
    try foundationDecoder.decode(CloudIdentifiersRequest.self, from: data).localIdentifiers
}

/// Concord: the answer written straight to bytes, with the server's static keys (`key(plain:)`,
/// as its mapping answers are written).
func concordEncode(_ mappings: [CloudIdentifierMapping]) -> [UInt8] {
    var writer = JSONWriter(capacity: 64 + mappings.count * 160)
    writer.beginObject()
    writer.key(plain: "mappings")
    writer.beginArray()
    for mapping in mappings {
        writer.beginObject()
        writer.key(plain: "localIdentifier")
        writer.string(mapping.localIdentifier)
        writer.key(plain: "cloudIdentifier")
        writer.string(mapping.cloudIdentifier)
        writer.endObject()
    }
    writer.endArray()
    writer.endObject()
    return writer.bytes
}

func foundationEncode(_ mappings: [CloudIdentifierMapping]) throws -> Data {
    try foundationEncoder.encode(CloudIdentifiersResponse(mappings: mappings))
}

// MARK: - Correctness gate

do {
    guard try concordDecode(requestBytes) == localIdentifiers else { fail("Concord decoded different identifiers") }
    guard try foundationDecode(requestData) == localIdentifiers else { fail("Foundation decoded different identifiers") }
    let written = concordEncode(mappings)
    let reread = try foundationDecoder.decode(CloudIdentifiersResponse.self, from: Data(written))
    guard reread.mappings == mappings else { fail("Concord's encoded answer does not decode to the mappings") }
} catch {
    fail("correctness check threw: \(error)")
}

// MARK: - Measurement

/// Keeps results observable so the optimiser cannot drop the work.
nonisolated(unsafe) var sink = 0

/// Wall-clock nanoseconds: for time budgets only.
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// CPU time of this thread in nanoseconds: what samples are measured in. On a loaded machine a
/// wall-clock sample that spans a preemption counts other processes' time, and long samples
/// (Foundation's) are preempted more often than short ones, which would bias the ratio.
func threadCPUTime() -> UInt64 {
    var spec = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec) == 0 else { return now() }
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// Runs `body` `count` times and returns CPU nanoseconds per run.
@inline(never)
func timed(_ count: Int, _ body: () throws -> Int) rethrows -> Double {
    let start = threadCPUTime()
    for _ in 0..<count { sink &+= try body() }
    return Double(threadCPUTime() - start) / Double(count)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

struct Comparison {
    var name: String
    var concord: () throws -> Int
    var foundation: () throws -> Int
}

struct Outcome {
    var name: String
    var concordMicros: Double
    var foundationMicros: Double
    var concordBestMicros: Double
    var foundationBestMicros: Double
    var samples: Int
    var speedup: Double { self.foundationMicros / self.concordMicros }
    /// Ratio of the fastest samples: the least disturbed by other load, a cross-check on the median.
    var bestSpeedup: Double { self.foundationBestMicros / self.concordBestMicros }
}

/// Alternates the two sides sample by sample until the time share is spent.
func measure(_ comparison: Comparison, seconds: Double) throws -> Outcome {
    // Warm up both (caches, lazy initialisation), and size the inner loop to ~0.5 ms per sample:
    // short enough that most samples fit between two preemptions on a loaded machine.
    var warmEnd = now() + UInt64(0.1 * seconds * 1e9)
    var perRunConcord = 1.0, perRunFoundation = 1.0
    while now() < warmEnd {
        perRunConcord = try timed(1, comparison.concord)
        perRunFoundation = try timed(1, comparison.foundation)
    }
    let innerConcord = max(1, Int(500_000 / max(perRunConcord, 1)))
    let innerFoundation = max(1, Int(500_000 / max(perRunFoundation, 1)))

    var concordSamples: [Double] = [], foundationSamples: [Double] = []
    warmEnd = now() + UInt64(0.9 * seconds * 1e9)
    var round = 0
    while now() < warmEnd || concordSamples.count < 5 {
        // Swap who goes first every round so neither always runs on a "cold" or "hot" slot.
        if round % 2 == 0 {
            concordSamples.append(try timed(innerConcord, comparison.concord))
            foundationSamples.append(try timed(innerFoundation, comparison.foundation))
        } else {
            foundationSamples.append(try timed(innerFoundation, comparison.foundation))
            concordSamples.append(try timed(innerConcord, comparison.concord))
        }
        round += 1
    }
    return Outcome(
        name: comparison.name,
        concordMicros: median(concordSamples) / 1000,
        foundationMicros: median(foundationSamples) / 1000,
        concordBestMicros: (concordSamples.min() ?? .nan) / 1000,
        foundationBestMicros: (foundationSamples.min() ?? .nan) / 1000,
        samples: concordSamples.count
    )
}

let comparisons = [
    Comparison(
        name: "decode `{\"localIdentifiers\":[…]}`",
        concord: { try concordDecode(requestBytes).count },
        foundation: { try foundationDecode(requestData).count }
    ),
    Comparison(
        name: "encode `{\"mappings\":[…]}`",
        concord: { concordEncode(mappings).count },
        foundation: { try foundationEncode(mappings).count }
    ),
]

var outcomes: [Outcome] = []
do {
    for comparison in comparisons {
        outcomes.append(try measure(comparison, seconds: secondsBudget / Double(comparisons.count)))
    }
} catch {
    fail("benchmark threw: \(error)")
}

// MARK: - Report

func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

let answerBytes = concordEncode(mappings).count
// Foundation's output differs in size: on Linux JSONEncoder escapes "/" as "\/" by default.
let foundationAnswerBytes = (try? foundationEncode(mappings).count) ?? 0
if markdown {
    print("| JSON, \(itemCount) items | Concord µs/batch (median) | Foundation µs/batch (median) | Concord speed-up (median) | speed-up of best samples | samples |")
    print("|---|---:|---:|---:|---:|---:|")
    for outcome in outcomes {
        print("| \(outcome.name) | \(fixed(outcome.concordMicros)) | \(fixed(outcome.foundationMicros)) | **\(fixed(outcome.speedup, 2))×** | \(fixed(outcome.bestSpeedup, 2))× | \(outcome.samples) |")
    }
    print("")
    print("Request \(requestBytes.count) B; answer \(answerBytes) B from Concord, \(foundationAnswerBytes) B from Foundation.")
} else {
    print("items: \(itemCount), request \(requestBytes.count) B, answer \(answerBytes) B (Foundation \(foundationAnswerBytes) B)")
    for outcome in outcomes {
        print("\(outcome.name): Concord \(fixed(outcome.concordMicros)) µs, Foundation \(fixed(outcome.foundationMicros)) µs, speed-up \(fixed(outcome.speedup, 2))× (best samples \(fixed(outcome.bestSpeedup, 2))×, \(outcome.samples) samples)")
    }
}
// Printed to stderr so the optimiser keeps the work and stdout stays a clean table.
FileHandle.standardError.write(Data("checksum \(sink)\n".utf8))
